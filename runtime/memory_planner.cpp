// The memory planner's common part: strategy names, the lower bound, the validator,
// the summary and the dispatch to the strategies (memory_planner_strategies.cpp).
#include "runtime/memory_planner.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "runtime/error.h"
#include "runtime/memory_planner_strategies.h"

namespace sdspeed {

namespace {

constexpr PlanStrategy kStrategies[] = {PlanStrategy::Naive, PlanStrategy::Equality,
                                        PlanStrategy::GreedyInOrder, PlanStrategy::GreedyBySize};

void checkRecords(const std::vector<TensorUsage>& records) {
  for (size_t i = 0; i < records.size(); ++i) {
    const TensorUsage& r = records[i];
    if (r.firstOp < 0 || r.lastOp < r.firstOp)
      throw Error("memory planner: tensor " + std::to_string(i) + " has lifetime [" +
                  std::to_string(r.firstOp) + ", " + std::to_string(r.lastOp) +
                  "] (needs 0 <= firstOp <= lastOp)");
  }
}

std::string describe(const std::vector<TensorUsage>& records, const MemoryPlan& plan, size_t i) {
  const TensorUsage& r = records[i];
  const TensorPlacement& p = plan.placements[i];
  return "tensor " + std::to_string(i) + " (" + std::to_string(r.bytes) + " B, ops " +
         std::to_string(r.firstOp) + ".." + std::to_string(r.lastOp) + ", buffer " +
         std::to_string(p.buffer) + " bytes [" + std::to_string(p.offset) + ", " +
         std::to_string(p.offset + r.bytes) + "))";
}

std::string formatBytes(uint64_t bytes) {
  char buf[64];
  if (bytes >= (uint64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

std::string formatRatio(uint64_t num, uint64_t den) {
  if (den == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fx", static_cast<double>(num) / static_cast<double>(den));
  return buf;
}

}  // namespace

const char* planStrategyName(PlanStrategy s) {
  switch (s) {
    case PlanStrategy::Naive: return "naive";
    case PlanStrategy::Equality: return "equality";
    case PlanStrategy::GreedyInOrder: return "greedy-in-order";
    case PlanStrategy::GreedyBySize: return "greedy-by-size";
  }
  return "?";
}

PlanStrategy parsePlanStrategy(std::string_view name) {
  std::string known;
  for (PlanStrategy s : kStrategies) {
    if (name == planStrategyName(s)) return s;
    known += known.empty() ? "" : ", ";
    known += planStrategyName(s);
  }
  throw Error("unknown memory planner strategy '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<PlanStrategy> allPlanStrategies() { return {std::begin(kStrategies), std::end(kStrategies)}; }

uint64_t MemoryPlan::totalBytes() const {
  uint64_t total = 0;
  for (uint64_t b : bufferBytes) total += b;
  return total;
}

std::vector<uint64_t> MemoryPlan::arenaOffsets() const {
  std::vector<uint64_t> offsets{0};
  for (uint64_t b : bufferBytes) offsets.push_back(planner::alignUp(offsets.back() + b, alignment));
  if (!bufferBytes.empty()) offsets.back() = offsets[offsets.size() - 2] + bufferBytes.back();
  return offsets;
}

uint64_t lowerBoundBytes(const std::vector<TensorUsage>& records) {
  checkRecords(records);
  // +bytes when a tensor is written, -bytes after its last reader; at one op the
  // frees come first, so the running sum peaks at the true maximum alive.
  std::vector<std::pair<int64_t, int64_t>> events;  // (op, delta)
  events.reserve(2 * records.size());
  for (const TensorUsage& r : records) {
    events.emplace_back(r.firstOp, static_cast<int64_t>(r.bytes));
    events.emplace_back(int64_t{r.lastOp} + 1, -static_cast<int64_t>(r.bytes));
  }
  std::sort(events.begin(), events.end());
  int64_t alive = 0, peak = 0;
  for (const auto& [op, delta] : events) {
    alive += delta;
    peak = std::max(peak, alive);
  }
  return static_cast<uint64_t>(peak);
}

MemoryPlan planMemory(const std::vector<TensorUsage>& records, PlanStrategy strategy,
                      uint64_t alignment) {
  checkRecords(records);
  if (alignment == 0) throw Error("memory planner: alignment must be at least 1 byte");
  MemoryPlan plan;
  plan.strategy = strategy;
  plan.alignment = alignment;
  plan.lowerBound = lowerBoundBytes(records);
  for (const TensorUsage& r : records) plan.naiveBytes += r.bytes;
  switch (strategy) {
    case PlanStrategy::Naive: planner::naive(records, plan); break;
    case PlanStrategy::Equality: planner::equality(records, plan); break;
    case PlanStrategy::GreedyInOrder: planner::greedyInOrder(records, plan); break;
    case PlanStrategy::GreedyBySize: planner::greedyBySize(records, plan); break;
  }
#ifndef NDEBUG
  validatePlan(records, plan);
#endif
  return plan;
}

MemoryPlan planMemory(const std::vector<TensorUsage>& records, std::string_view strategy,
                      uint64_t alignment) {
  return planMemory(records, parsePlanStrategy(strategy), alignment);
}

std::string planProblem(const std::vector<TensorUsage>& records, const MemoryPlan& plan) {
  if (plan.placements.size() != records.size())
    return std::to_string(plan.placements.size()) + " placements for " +
           std::to_string(records.size()) + " tensors";
  if (plan.alignment == 0) return "alignment 0";
  for (size_t i = 0; i < records.size(); ++i) {
    const TensorUsage& r = records[i];
    const TensorPlacement& p = plan.placements[i];
    if (r.firstOp < 0 || r.lastOp < r.firstOp) return describe(records, plan, i) + " has a bad lifetime";
    if (p.buffer >= plan.bufferBytes.size())
      return describe(records, plan, i) + " is in a buffer that does not exist (" +
             std::to_string(plan.bufferBytes.size()) + " buffers)";
    if (p.offset % plan.alignment != 0)
      return describe(records, plan, i) + " is not aligned to " + std::to_string(plan.alignment);
    const uint64_t size = plan.bufferBytes[p.buffer];
    if (p.offset > size || r.bytes > size - p.offset)
      return describe(records, plan, i) + " ends past its buffer's " + std::to_string(size) + " bytes";
  }
  // Sweep the tensors in order of firstOp, keeping those still alive.
  std::vector<size_t> order(records.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return records[a].firstOp < records[b].firstOp; });
  std::vector<size_t> alive;
  for (size_t i : order) {
    const TensorUsage& r = records[i];
    const TensorPlacement& p = plan.placements[i];
    std::erase_if(alive, [&](size_t a) { return records[a].lastOp < r.firstOp; });
    for (size_t a : alive) {
      const TensorPlacement& q = plan.placements[a];
      if (q.buffer != p.buffer || r.bytes == 0 || records[a].bytes == 0) continue;
      if (q.offset < p.offset + r.bytes && p.offset < q.offset + records[a].bytes)
        return describe(records, plan, a) + " and " + describe(records, plan, i) +
               " are alive together at op " + std::to_string(r.firstOp) + " and overlap";
    }
    alive.push_back(i);
  }
  return {};
}

void validatePlan(const std::vector<TensorUsage>& records, const MemoryPlan& plan) {
  std::string problem = planProblem(records, plan);
  if (!problem.empty())
    throw Error(std::string("memory plan (") + planStrategyName(plan.strategy) + "): " + problem);
}

std::string planSummary(const MemoryPlan& plan) {
  const uint64_t total = plan.totalBytes();
  const size_t k = plan.bufferBytes.size();
  return std::string(planStrategyName(plan.strategy)) + ": " + std::to_string(plan.placements.size()) +
         " tensors in " + std::to_string(k) + (k == 1 ? " buffer, " : " buffers, ") + formatBytes(total) +
         " = " + formatRatio(total, plan.lowerBound) + " the lower bound " + formatBytes(plan.lowerBound) +
         ", " + formatRatio(total, plan.naiveBytes) + " naive " + formatBytes(plan.naiveBytes) +
         " (alignment " + std::to_string(plan.alignment) + ")";
}

}  // namespace sdspeed
