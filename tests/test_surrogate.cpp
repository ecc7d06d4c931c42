// The Gaussian-process surrogate behind the `model` strategy (tuning/surrogate.h), on
// GroupNorm's declared space with synthetic costs: it interpolates what it measured,
// is unsure far from it, ranks by expected improvement without proposing a measured
// point, survives failed points, and finds a smooth space's optimum with far fewer
// points than random search.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "kernels/groupnorm/groupnorm_family.h"
#include "test_support.h"
#include "tuning/strategy.h"
#include "tuning/surrogate.h"

using namespace sdspeed;

namespace {

// A smooth cost over the parameters' positions: a bowl around a point in the middle of
// each variant's space, variants offset from each other.
double bowl(const Candidate& c) {
  double d2 = 0;
  for (const auto& p : c.variant->params) {
    const std::vector<int> values = ascendingValues(p);
    const double at = static_cast<double>(ascendingPosition(values, c.point[p.name]));
    const double mid = static_cast<double>(values.size() - 1) / 2.0;
    d2 += (at - mid) * (at - mid);
  }
  return 10.0 * (1.0 + 0.3 * d2) * (c.variant->name == "split" ? 1.0 : 1.5);
}

// GroupNorm's space on a GPU allowing work-groups of 1024 (about a thousand points).
std::vector<Candidate> space() {
  static const GroupNormFamily fam;
  DeviceInfo dev;
  dev.type = DeviceType::Gpu;
  dev.maxWorkGroupSize = 1024;
  dev.localMemBytes = 64 * 1024;
  dev.computeUnits = 8;
  return tuningSpace(fam, dev);
}

TEST(Surrogate, InterpolatesMeasuredPointsAndIsUnsureFarFromThem) {
  const auto sp = space();
  ASSERT_GT(sp.size(), 50u);
  GpSurrogate gp(sp);
  SDSPEED_SEEDED_RNG(rng);
  std::set<size_t> measured;
  while (measured.size() < 30) measured.insert(rng() % sp.size());
  for (size_t i : measured) gp.add(i, bowl(sp[i]));
  gp.add(*measured.begin(), 1.0);  // a second report of a point is ignored
  EXPECT_EQ(gp.measured(), 30u);
  double maxMeasuredSd = 0, maxUnmeasuredSd = 0;
  // Standardized log-times of the measured points, to compare the posterior mean with.
  std::vector<double> logs;
  for (size_t i : measured) logs.push_back(std::log(bowl(sp[i])));
  double mean = 0, var = 0;
  for (double v : logs) mean += v;
  mean /= static_cast<double>(logs.size());
  for (double v : logs) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(var / static_cast<double>(logs.size()));
  size_t k = 0;
  for (size_t i : measured) {
    double m = 0, s = 0;
    gp.predict(i, m, s);
    // The noise variance (0.05 on standardized values) lets the fit miss a point a little.
    EXPECT_NEAR(m, (logs[k++] - mean) / sd, 0.5) << sp[i].text();
    maxMeasuredSd = std::max(maxMeasuredSd, s);
  }
  for (size_t i = 0; i < sp.size(); ++i)
    if (!measured.count(i)) {
      double m = 0, s = 0;
      gp.predict(i, m, s);
      EXPECT_TRUE(std::isfinite(m) && std::isfinite(s)) << sp[i].text();
      maxUnmeasuredSd = std::max(maxUnmeasuredSd, s);
    }
  EXPECT_LT(maxMeasuredSd, 0.3);
  EXPECT_GT(maxUnmeasuredSd, 2 * maxMeasuredSd);
}

TEST(Surrogate, ProposesOnlyUnmeasuredPointsAndSurvivesFailures) {
  const auto sp = space();
  GpSurrogate gp(sp);
  EXPECT_EQ(gp.bestExpectedImprovement(), 0);  // nothing known: the first point
  std::set<size_t> seen;
  for (size_t n = 0; n < sp.size(); ++n) {
    const long pick = gp.bestExpectedImprovement();
    ASSERT_GE(pick, 0);
    ASSERT_TRUE(seen.insert(static_cast<size_t>(pick)).second) << "proposed twice: " << sp[pick].text();
    // Every third point fails, and one takes no time at all: +inf and 0 must not poison
    // the model with NaN (a NaN ranking ends the search early).
    gp.add(static_cast<size_t>(pick), n % 3 == 2 ? kFailedCost : n == 4 ? 0.0 : bowl(sp[pick]));
  }
  EXPECT_EQ(gp.bestExpectedImprovement(), -1);
}

// On a smooth space the model strategy reaches the optimum with 10% of the points in
// every seed; random search with the same budget misses it in most.
TEST(Surrogate, ModelStrategyFindsSmoothOptimumFasterThanRandom) {
  const auto sp = space();
  double best = INFINITY;
  for (const auto& c : sp) best = std::min(best, bowl(c));
  const size_t budget = sp.size() / 10;
  auto hits = [&](const char* name) {
    int ok = 0;
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      auto st = makeStrategy(name, sp, budget, seed);
      double found = INFINITY;
      for (size_t n = 0; n < budget; ++n) {
        auto idx = st->next();
        if (!idx) {
          ADD_FAILURE() << name << " stopped after " << n << " of " << budget << " points";
          break;
        }
        found = std::min(found, bowl(sp[*idx]));
        st->report(*idx, bowl(sp[*idx]));
      }
      ok += found <= best * 1.0001;
    }
    return ok;
  };
  const int model = hits("model"), random = hits("random");
  EXPECT_EQ(model, 10) << "random: " << random;
  EXPECT_LT(random, model);
}

}  // namespace
