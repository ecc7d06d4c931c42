#include "tuning/model_budget.h"

#include <queue>
#include <tuple>

namespace sdspeed {

std::vector<size_t> allocatePoints(const std::vector<BudgetItem>& items, size_t total) {
  std::vector<size_t> points(items.size(), 0);
  // (priority, -index): the max-heap pops the largest priority, then the smallest index.
  using Slot = std::tuple<double, long>;
  std::priority_queue<Slot> heap;
  // First round: one point each, heaviest first (all of them when total allows).
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].spaceSize > 0) heap.push({items[i].weight, -static_cast<long>(i)});
  size_t left = total;
  std::vector<size_t> firstRound;
  while (left > 0 && !heap.empty()) {
    const size_t i = static_cast<size_t>(-std::get<1>(heap.top()));
    heap.pop();
    points[i] = 1;
    --left;
    firstRound.push_back(i);
  }
  if (left == 0) return points;
  // Then D'Hondt over the items with room left.
  for (size_t i : firstRound)
    if (points[i] < items[i].spaceSize) heap.push({items[i].weight / 2.0, -static_cast<long>(i)});
  while (left > 0 && !heap.empty()) {
    const size_t i = static_cast<size_t>(-std::get<1>(heap.top()));
    heap.pop();
    ++points[i];
    --left;
    if (points[i] < items[i].spaceSize)
      heap.push({items[i].weight / static_cast<double>(points[i] + 1), -static_cast<long>(i)});
  }
  return points;
}

double timeSlice(double remaining, double weight, double remainingWeight) {
  if (remaining <= 0) return 0;
  if (!(remainingWeight > 0)) return remaining;
  return remaining * weight / remainingWeight;
}

}  // namespace sdspeed
