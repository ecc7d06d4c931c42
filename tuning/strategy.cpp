#include "tuning/strategy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "runtime/opencl/cl_error.h"
#include "tuning/surrogate.h"

namespace sdspeed {

std::vector<Candidate> tuningSpace(const Family& fam, const DeviceCaps& dev, const std::vector<std::string>& variants) {
  for (const auto& name : variants) fam.variant(name);  // throws for an unknown name
  std::vector<Candidate> out;
  for (const auto& v : fam.variants()) {
    if (!variants.empty() && std::find(variants.begin(), variants.end(), v.name) == variants.end()) continue;
    for (auto& p : v.space())
      if (v.deviceLimitReason(p, dev).empty()) out.push_back({&v, p});
  }
  return out;
}

std::vector<Candidate> computingIn(const std::vector<Candidate>& space, DType arithmetic) {
  std::vector<Candidate> out;
  for (const auto& c : space) {
    const auto& ar = c.variant->arithmetic;
    if (std::find(ar.begin(), ar.end(), arithmetic) != ar.end()) out.push_back(c);
  }
  return out;
}

std::vector<int> ascendingValues(const ParamDef& p) {
  std::vector<int> values = p.values;
  std::sort(values.begin(), values.end());
  return values;
}

size_t ascendingPosition(const std::vector<int>& ascending, int value) {
  return static_cast<size_t>(std::find(ascending.begin(), ascending.end(), value) - ascending.begin());
}

namespace {

class Exhaustive : public Strategy {
 public:
  explicit Exhaustive(size_t n) : n_(n) {}
  std::optional<size_t> next() override { return i_ < n_ ? std::optional<size_t>(i_++) : std::nullopt; }
  void report(size_t, double) override {}
  std::vector<size_t> plannedOrder() const override {
    std::vector<size_t> all(n_);
    std::iota(all.begin(), all.end(), size_t{0});
    return all;
  }

 private:
  size_t n_, i_ = 0;
};

class RandomOrder : public Strategy {
 public:
  RandomOrder(size_t n, uint64_t seed) : order_(n) {
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < n; ++i) order_[i] = i;
    for (size_t i = n; i > 1; --i) std::swap(order_[i - 1], order_[uniformIndex(rng, i)]);
  }
  std::optional<size_t> next() override { return i_ < order_.size() ? std::optional<size_t>(order_[i_++]) : std::nullopt; }
  void report(size_t, double) override {}
  std::vector<size_t> plannedOrder() const override { return order_; }

 private:
  std::vector<size_t> order_;
  size_t i_ = 0;
};

// Simulated annealing. Neighbours of a point: the same variant with one parameter
// moved to the next or previous value of its (sorted) value list; with a small
// probability a jump to a random point of any variant. Measured points cost nothing
// to revisit, so the walk moves over them freely and stops only at an unmeasured
// one. It starts from the known points (makeStrategy's `known`), then each variant's
// defaults, and acceptance of a worse point
// depends on the relative slowdown and a temperature that falls with the budget spent.
class Anneal : public Strategy {
 public:
  Anneal(const std::vector<Candidate>& space, size_t budget, uint64_t seed, const Problem* prob,
         const std::vector<size_t>& known)
      : space_(space), cost_(space.size(), -1.0), budget_(std::max<size_t>(budget, 1)), rng_(seed) {
    for (size_t i = 0; i < space.size(); ++i) byText_[space[i].text()] = i;
    for (size_t k : known)
      if (k < space.size() && std::find(seeds_.begin(), seeds_.end(), k) == seeds_.end()) seeds_.push_back(k);
    known_ = seeds_.size();
    // Seeds: the defaults of every variant (the declared starting points), fitted to the
    // problem where it is known and the fitted point is in the space.
    for (const auto& c : space) {
      Candidate d{c.variant, c.variant->defaults()};
      if (prob) {
        const Candidate fitted{c.variant, c.variant->defaultsFor(*prob)};
        if (byText_.count(fitted.text())) d = fitted;
      }
      auto it = byText_.find(d.text());
      if (it != byText_.end() && std::find(seeds_.begin(), seeds_.end(), it->second) == seeds_.end())
        seeds_.push_back(it->second);
    }
  }

  std::optional<size_t> next() override {
    if (measured_ >= space_.size()) return std::nullopt;
    while (!seeds_.empty()) {
      size_t s = seeds_.front();
      seeds_.erase(seeds_.begin());
      if (cost_[s] < 0) return s;
    }
    if (current_ == kNone) current_ = best_ != kNone ? best_ : uniformIndex(rng_, space_.size());
    // Walk over measured points until an unmeasured neighbour turns up.
    for (int step = 0; step < 10000; ++step) {
      size_t cand = neighbour(current_);
      if (cost_[cand] < 0) return cand;
      accept(cand);
    }
    for (size_t i = 0; i < space_.size(); ++i)  // stuck: any unmeasured point
      if (cost_[i] < 0) return i;
    return std::nullopt;
  }

  size_t knownProposals() const override { return known_; }

  // Some variant's default point is still to be measured first.
  bool seedsPending() const {
    for (size_t s : seeds_)
      if (cost_[s] < 0) return true;
    return false;
  }

  void report(size_t index, double cost) override {
    if (cost_[index] < 0) ++measured_;
    cost_[index] = cost;
    if (best_ == kNone || cost < cost_[best_]) best_ = index;
    if (current_ == kNone) current_ = index;
    else accept(index);
  }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);

  double temperature() const {
    // From 0.3 (accept ~30% slower points often) down to 0.01 as the budget is spent.
    const double progress = std::min(1.0, static_cast<double>(measured_) / static_cast<double>(budget_));
    return 0.3 * std::pow(0.01 / 0.3, progress);
  }

  void accept(size_t cand) {
    const double c = cost_[cand], cur = cost_[current_];
    if (!std::isfinite(c)) return;
    if (!std::isfinite(cur) || c <= cur) {
      current_ = cand;
      return;
    }
    const double p = std::exp(-(c - cur) / (cur * temperature()));
    if (std::uniform_real_distribution<double>(0, 1)(rng_) < p) current_ = cand;
    // A walk that wandered far from the best point returns to it now and then.
    if (best_ != kNone && std::uniform_real_distribution<double>(0, 1)(rng_) < 0.05) current_ = best_;
  }

  size_t neighbour(size_t from) {
    if (std::uniform_real_distribution<double>(0, 1)(rng_) < 0.05) return uniformIndex(rng_, space_.size());
    const Candidate& c = space_[from];
    const auto& params = c.variant->params;
    if (params.empty()) return uniformIndex(rng_, space_.size());
    for (int attempt = 0; attempt < 32; ++attempt) {
      const ParamDef& def = params[uniformIndex(rng_, params.size())];
      const std::vector<int> values = ascendingValues(def);
      const size_t pos = ascendingPosition(values, c.point[def.name]);
      const bool up = uniformIndex(rng_, 2) == 1;
      if ((up && pos + 1 >= values.size()) || (!up && pos == 0)) continue;
      auto map = c.point.values();
      map[def.name] = values[up ? pos + 1 : pos - 1];
      auto it = byText_.find(Candidate{c.variant, ParamPoint(map)}.text());
      if (it != byText_.end()) return it->second;  // absent: pruned by a constraint
    }
    return uniformIndex(rng_, space_.size());
  }

  const std::vector<Candidate>& space_;
  std::vector<double> cost_;  // -1: not measured
  std::map<std::string, size_t> byText_;
  std::vector<size_t> seeds_;
  size_t known_ = 0;  // the first known_ seeds are makeStrategy's known points
  size_t budget_, measured_ = 0, current_ = kNone, best_ = kNone;
  std::mt19937_64 rng_;
};

// The model-guided strategy: the anneal walk above and a Gaussian-process surrogate
// (tuning/surrogate.h) take turns, point by point, after the variants' defaults. The
// walk polishes the basin it is in (it finds needles one parameter step from good
// points); the model's expected improvement jumps to regions the walk would only cross
// through worse points (the PoCL GEMM's best is two steps from the runner-up's basin).
// Every point either proposes is reported to both, so the walk may move to a good
// point the model found. Chosen offline over anneal alone, the model alone and other
// mixes: scripts/dev/surrogate-study.py, results/sweeps/README.md.
class ModelGuided : public Strategy {
 public:
  ModelGuided(const std::vector<Candidate>& space, size_t budget, uint64_t seed, const Problem* prob,
              const std::vector<size_t>& known)
      : walk_(space, budget, seed, prob, known), model_(space) {}

  std::optional<size_t> next() override {
    if (walk_.seedsPending() || reported_ % 2 == 0) return walk_.next();
    const long pick = model_.bestExpectedImprovement();
    if (pick < 0) return std::nullopt;
    return static_cast<size_t>(pick);
  }

  size_t knownProposals() const override { return walk_.knownProposals(); }

  void report(size_t index, double cost) override {
    ++reported_;
    walk_.report(index, cost);
    model_.add(index, cost);
  }

 private:
  Anneal walk_;
  GpSurrogate model_;
  size_t reported_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> makeStrategy(const std::string& name, const std::vector<Candidate>& space, size_t budget,
                                       uint64_t seed, const Problem* prob, const std::vector<size_t>& known) {
  if (name == "exhaustive") return std::make_unique<Exhaustive>(space.size());
  if (name == "random") return std::make_unique<RandomOrder>(space.size(), seed);
  if (name == "anneal") return std::make_unique<Anneal>(space, budget, seed, prob, known);
  if (name == "model") return std::make_unique<ModelGuided>(space, budget, seed, prob, known);
  throw Error("unknown strategy '" + name + "' (known: exhaustive, random, anneal, model)");
}

}  // namespace sdspeed
