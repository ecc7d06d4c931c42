// Search strategies over a tuning space (after KTT's searchers). A strategy proposes
// the index of the next candidate to measure and is told its cost (median time;
// +inf for a point that failed or is unsupported). The driver (tuning/tuner.h)
// enforces the budget; `--replay` feeds costs from a recorded sweep instead of the
// device, so strategies can be compared offline.
#pragma once

#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/family.h"

namespace sdspeed {

struct Candidate {
  const VariantDef* variant;
  ParamPoint point;
  std::string text() const { return variant->name + " [" + point.text() + "]"; }
};

// Every (variant, point) of the family that satisfies the constraints and the device's
// limits, variants in declaration order (all, or those named).
std::vector<Candidate> tuningSpace(const Family& fam, const DeviceCaps& dev,
                                   const std::vector<std::string>& variants = {});
// The candidates whose variant computes in `arithmetic` (VariantDef::arithmetic): under
// --arithmetic f16 the f32 variants would spend a budget on points that can only answer
// "computes in f32 only". Both tune paths (one op, the whole model) search this.
std::vector<Candidate> computingIn(const std::vector<Candidate>& space, DType arithmetic);

constexpr double kFailedCost = std::numeric_limits<double>::infinity();

class Strategy {
 public:
  virtual ~Strategy() = default;
  // The next unmeasured candidate, or nullopt when the strategy has nothing left.
  virtual std::optional<size_t> next() = 0;
  virtual void report(size_t index, double cost) = 0;
  // The whole order of proposals when it does not depend on the costs (exhaustive,
  // random), so their programs can be built ahead; empty for adaptive strategies.
  virtual std::vector<size_t> plannedOrder() const { return {}; }
  // How many of makeStrategy's known points it proposes (first): the driver adds them to
  // the budget, since they were timed before the search and cost nothing.
  virtual size_t knownProposals() const { return 0; }
};

// "exhaustive", "random", "anneal" (simulated annealing over parameter
// neighbourhoods) or "model" (the anneal walk and a Gaussian-process surrogate's
// expected improvement taking turns: tuning/surrogate.h); budget: how many points the
// driver will let it measure (anneal plans its cooling with it). prob: the instance's
// problem, when known; anneal and model then start from each variant's defaults fitted
// to it (VariantDef::defaultsFor: the point an untuned run takes), else from the declared
// defaults. known: indexes of points already known to be good for this instance (the
// current choice, which on a device without a database of its own is a sibling device's
// tuned point through the vendor fallback; the points its database records): anneal and
// model propose them before the defaults, in this order, so the walk starts from the
// best of them (they were timed just before, so they cost a cache lookup, not a
// measurement). Exhaustive and random search visit every point anyway and ignore them.
// Throws Error for an unknown name.
std::unique_ptr<Strategy> makeStrategy(const std::string& name, const std::vector<Candidate>& space,
                                       size_t budget, uint64_t seed, const Problem* prob = nullptr,
                                       const std::vector<size_t>& known = {});

// A parameter's values in ascending order, and a value's place among them: the order
// in which anneal's moves step ("the next value up") and the surrogate places points.
std::vector<int> ascendingValues(const ParamDef& p);
size_t ascendingPosition(const std::vector<int>& ascending, int value);

// A uniform index in [0, n) from a 64-bit generator, the same on every platform
// (std::uniform_int_distribution is not specified bit for bit).
inline size_t uniformIndex(std::mt19937_64& rng, size_t n) { return static_cast<size_t>(rng() % n); }

}  // namespace sdspeed
