// The memory planner's strategies: runtime/memory_planner.h describes them.
#include "runtime/memory_planner_strategies.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <utility>

namespace sdspeed::planner {

namespace {

// Buffers in use, the one whose tenant dies first on top: (tenant's lastOp, buffer).
using InUse = std::priority_queue<std::pair<int, size_t>, std::vector<std::pair<int, size_t>>,
                                  std::greater<>>;

// The shared-objects loop of equality and greedy-in-order: tensors by firstOp; the
// buffers whose tenants died before it go back to the pool (release(buffer)); then
// take(bytes) returns a free buffer to reuse, or none to open a new one.
template <typename Release, typename Take>
void sharedObjects(const std::vector<TensorUsage>& records, MemoryPlan& plan, Release release, Take take) {
  constexpr size_t kNone = static_cast<size_t>(-1);
  plan.bufferBytes.clear();
  plan.placements.assign(records.size(), {});
  InUse inUse;
  for (size_t i : byFirstOp(records)) {
    const TensorUsage& r = records[i];
    while (!inUse.empty() && inUse.top().first < r.firstOp) {
      release(inUse.top().second);
      inUse.pop();
    }
    size_t buffer = take(r.bytes);
    if (buffer == kNone) {
      buffer = plan.bufferBytes.size();
      plan.bufferBytes.push_back(r.bytes);
    }
    plan.bufferBytes[buffer] = std::max(plan.bufferBytes[buffer], r.bytes);
    plan.placements[i] = {buffer, 0};
    inUse.emplace(r.lastOp, buffer);
  }
}

}  // namespace

std::vector<size_t> byFirstOp(const std::vector<TensorUsage>& records) {
  std::vector<size_t> order(records.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return records[a].firstOp < records[b].firstOp; });
  return order;
}

void naive(const std::vector<TensorUsage>& records, MemoryPlan& plan) {
  plan.bufferBytes.clear();
  plan.placements.clear();
  for (size_t i = 0; i < records.size(); ++i) {
    plan.bufferBytes.push_back(records[i].bytes);
    plan.placements.push_back({i, 0});
  }
}

void equality(const std::vector<TensorUsage>& records, MemoryPlan& plan) {
  std::map<uint64_t, std::vector<size_t>> free;  // size -> free buffers of that size
  sharedObjects(
      records, plan, [&](size_t buffer) { free[plan.bufferBytes[buffer]].push_back(buffer); },
      [&](uint64_t bytes) {
        auto it = free.find(bytes);
        if (it == free.end() || it->second.empty()) return static_cast<size_t>(-1);
        size_t buffer = it->second.back();
        it->second.pop_back();
        return buffer;
      });
}

void greedyInOrder(const std::vector<TensorUsage>& records, MemoryPlan& plan) {
  std::set<std::pair<uint64_t, size_t>> free;  // (size, buffer)
  sharedObjects(
      records, plan, [&](size_t buffer) { free.emplace(plan.bufferBytes[buffer], buffer); },
      [&](uint64_t bytes) {
        if (free.empty()) return static_cast<size_t>(-1);
        // The smallest free buffer >= bytes, or the largest one below it (which grows),
        // whichever is closer in size; a tie keeps the one that need not grow.
        auto above = free.lower_bound({bytes, 0});
        auto best = above;
        if (above == free.end() ||
            (above != free.begin() && bytes - std::prev(above)->first < above->first - bytes))
          best = std::prev(above);
        size_t buffer = best->second;
        free.erase(best);
        return buffer;
      });
}

void greedyBySize(const std::vector<TensorUsage>& records, MemoryPlan& plan, bool smallestGap) {
  constexpr uint64_t kNone = static_cast<uint64_t>(-1);
  const uint64_t align = plan.alignment;
  plan.placements.assign(records.size(), {});
  std::vector<size_t> order(records.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (records[a].bytes != records[b].bytes) return records[a].bytes > records[b].bytes;
    return records[a].firstOp < records[b].firstOp;
  });
  std::vector<size_t> placed;  // tensors placed so far, by offset
  uint64_t total = 0;
  for (size_t i : order) {
    const TensorUsage& r = records[i];
    uint64_t best = kNone, bestGap = kNone;
    uint64_t top = 0;  // aligned end of the overlapping tensors seen so far
    for (size_t p : placed) {
      const TensorUsage& q = records[p];
      if (q.lastOp < r.firstOp || r.lastOp < q.firstOp) continue;  // never alive together
      const uint64_t offset = plan.placements[p].offset;
      if (offset >= top) {
        const uint64_t gap = offset - top;
        if (gap >= r.bytes && gap < bestGap && (smallestGap || best == kNone)) {
          best = top;
          bestGap = gap;
        }
      }
      top = std::max(top, alignUp(offset + q.bytes, align));
    }
    if (best == kNone) best = top;
    plan.placements[i] = {0, best};
    auto at = std::upper_bound(placed.begin(), placed.end(), best,
                               [&](uint64_t off, size_t p) { return off < plan.placements[p].offset; });
    placed.insert(at, i);
    total = std::max(total, best + r.bytes);
  }
  plan.bufferBytes.clear();
  if (!records.empty()) plan.bufferBytes.push_back(total);  // one arena
}

}  // namespace sdspeed::planner
