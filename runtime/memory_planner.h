// The memory planner: assigns the intermediate tensors of an op graph to shared
// device memory so that tensors alive at the same time never overlap.
//
// Input: one TensorUsage per intermediate tensor, its size in bytes and its lifetime
// [firstOp, lastOp] (inclusive op indices in execution order: the op that writes it
// and the last op that reads it). Two tensors are alive together when their
// lifetimes share an op; tensors whose lifetimes only touch end-to-start
// (a.lastOp + 1 == b.firstOp) may share memory.
//
// Output (MemoryPlan), one model for both OpenCL uses:
//  - shared objects (naive, equality, greedy-in-order): K buffers, each tensor in one
//    of them at offset 0; a buffer's size is the largest of its tenants. K separate
//    clCreateBuffer calls, or one arena with the buffers end to end (arenaOffsets).
//  - one arena (greedy-by-size): a single buffer, each tensor at its own byte offset,
//    a multiple of `alignment` (clCreateSubBuffer needs CL_DEVICE_MEM_BASE_ADDR_ALIGN,
//    which the device reports in BITS: pass bits / 8).
//
// Strategies (n tensors, K buffers):
//  - naive: one buffer per tensor, no sharing. Total = sum of sizes. O(n).
//  - equality: tensors in order of firstOp; each reuses a free buffer (whose last
//    tenant died before firstOp) of exactly its size, else gets a new one. Optimal
//    (= lower bound) when all sizes are equal; no help when sizes all differ.
//    O(n log n).
//  - greedy-in-order: tensors in order of firstOp; each takes the free buffer whose
//    size is closest to its own (the smallest one >= it, or the largest one < it,
//    whichever differs less; a smaller one grows to the tensor). O(n log n).
//  - greedy-by-size (the offset planner of TFLite GPU / ML Drift): tensors by size,
//    largest first (ties: earlier firstOp); each goes into the lowest gap that fits
//    it between the already placed tensors whose lifetimes overlap its own (gaps
//    start at aligned ends), else on top of the highest of them. TFLite takes the
//    smallest gap that fits instead; the lowest one did as well on random graphs
//    and better on the UNet-like test graph (tests/test_memory_planner.cpp).
//    O(n^2) time, O(n) memory. Near the lower bound in practice: ML Drift reports
//    SD 1.4 fp16 activations 4.31 GB (naive) -> 387 MB.
//
// Lower bound (lowerBoundBytes): the largest total size of the tensors alive at any
// one op; no plan of any strategy can be smaller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sdspeed {

struct TensorUsage {
  uint64_t bytes = 0;
  int firstOp = 0;  // op that writes it
  int lastOp = 0;   // last op that reads it (inclusive, >= firstOp)
};

enum class PlanStrategy { Naive, Equality, GreedyInOrder, GreedyBySize };

// "naive", "equality", "greedy-in-order", "greedy-by-size".
const char* planStrategyName(PlanStrategy s);
// Inverse of planStrategyName; throws Error naming the unknown strategy and the known ones.
PlanStrategy parsePlanStrategy(std::string_view name);
// Every strategy, in the order above.
std::vector<PlanStrategy> allPlanStrategies();

struct TensorPlacement {
  size_t buffer = 0;    // index into MemoryPlan::bufferBytes
  uint64_t offset = 0;  // byte offset inside that buffer
};

struct MemoryPlan {
  PlanStrategy strategy = PlanStrategy::Naive;
  uint64_t alignment = 1;
  std::vector<uint64_t> bufferBytes;         // K buffers (one for greedy-by-size)
  std::vector<TensorPlacement> placements;   // one per TensorUsage, same order
  uint64_t lowerBound = 0;                   // lowerBoundBytes(records)
  uint64_t naiveBytes = 0;                   // sum of the tensor sizes

  // Sum of bufferBytes: the device memory the plan needs.
  uint64_t totalBytes() const;
  // Each buffer's base when the buffers are laid end to end in one arena, every
  // base a multiple of alignment; back() + 1 entry = the arena's size.
  std::vector<uint64_t> arenaOffsets() const;
};

// The largest total size of the tensors alive at any one op (0 for no tensors).
// Throws Error on a record with lastOp < firstOp or firstOp < 0.
uint64_t lowerBoundBytes(const std::vector<TensorUsage>& records);

// Plans records with the strategy. alignment (bytes, >= 1): every offset is a
// multiple of it. Throws Error on a bad record or alignment 0. In builds without
// NDEBUG the plan is validated (validatePlan) before it is returned.
MemoryPlan planMemory(const std::vector<TensorUsage>& records, PlanStrategy strategy,
                      uint64_t alignment = 1);
MemoryPlan planMemory(const std::vector<TensorUsage>& records, std::string_view strategy,
                      uint64_t alignment = 1);

// The first thing wrong with plan for records, "" when it is valid: one placement
// per record, every buffer index in range, every offset a multiple of the plan's
// alignment, every tensor inside its buffer, and no two tensors with overlapping
// lifetimes overlapping in the same buffer. O(n log n + overlapping pairs).
std::string planProblem(const std::vector<TensorUsage>& records, const MemoryPlan& plan);
// Throws Error("memory plan (STRATEGY): PROBLEM") when planProblem is not "".
void validatePlan(const std::vector<TensorUsage>& records, const MemoryPlan& plan);

// One line, e.g. "greedy-by-size: 541 tensors in 1 buffer, 80.2 MiB = 1.000x the
// lower bound 80.2 MiB, 0.044x naive 1815.8 MiB (alignment 256)".
std::string planSummary(const MemoryPlan& plan);

}  // namespace sdspeed
