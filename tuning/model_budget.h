// One budget for a whole model's tuning (`sdspeed tune --model DIR` without --op):
// a run spends its time in count x time per op instance, so the budget goes where
// that product is large. These are the pure parts, the same on every shard:
// every shard computes the allocation over ALL the model's instances and then tunes
// its own, so an instance gets the same points whichever shard tunes it, and a
// shard's share of the budget is the sum of its instances' shares.
#pragma once

#include <cstddef>
#include <vector>

namespace sdspeed {

struct BudgetItem {
  double weight = 0;     // count per run x the instance's current (or estimated) time
  size_t spaceSize = 0;  // points the instance's space holds: the most it can use
};

// --total-points N: points per item, proportional to weight by the highest-averages
// (D'Hondt) rule: each point in turn goes to the item with the largest
// weight / (points + 1) that still has unmeasured points; ties go to the earlier item.
// Every item gets one point before any gets two while N covers them all; with fewer
// points than items, the N heaviest get one each. Deterministic; sums to
// min(N, total space).
std::vector<size_t> allocatePoints(const std::vector<BudgetItem>& items, size_t total);

// --total-seconds T: an item's slice when the budget left is `remaining` seconds and
// the items not yet tuned (this one included) weigh `remainingWeight`: time an item
// did not use (a space exhausted, points reused from the sweep cache) goes to the ones
// after it.
double timeSlice(double remaining, double weight, double remainingWeight);

}  // namespace sdspeed
