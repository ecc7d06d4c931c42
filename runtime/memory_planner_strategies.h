// The memory planner's strategies (internal to runtime/memory_planner.cpp and its
// tests): each fills plan.bufferBytes and plan.placements for checked records;
// plan.alignment is set. What each does: runtime/memory_planner.h.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/memory_planner.h"

namespace sdspeed::planner {

inline uint64_t alignUp(uint64_t x, uint64_t alignment) { return (x + alignment - 1) / alignment * alignment; }

// Indices of records in order of firstOp (ties: index), the in-order strategies' order.
std::vector<size_t> byFirstOp(const std::vector<TensorUsage>& records);

void naive(const std::vector<TensorUsage>& records, MemoryPlan& plan);
void equality(const std::vector<TensorUsage>& records, MemoryPlan& plan);
void greedyInOrder(const std::vector<TensorUsage>& records, MemoryPlan& plan);
// Each tensor goes into the lowest gap that fits it; smallestGap: into the smallest
// gap that fits (TFLite's choice), kept for comparison (tests print both).
void greedyBySize(const std::vector<TensorUsage>& records, MemoryPlan& plan, bool smallestGap = false);

}  // namespace sdspeed::planner
