// A Gaussian-process surrogate of a tuning space, for the `model` strategy
// (tuning/strategy.cpp): it predicts log(time) of unmeasured points from the measured
// ones and ranks them by expected improvement over the best measured so far.
//
// Kernel: points of different variants correlate by a constant `cross` (a variant's
// times say little about another's); points of one variant by
// cross + (1 - cross) * exp(-|x - y|^2 / (2 ell^2)), where x holds each parameter's
// position in its sorted value list scaled to [0, 1] (so "next value up" is a step of
// 1/(n-1) whatever the values are). The settings (ell 0.5, cross 0.2, a noise variance
// of 0.05 on standardized log-times) were chosen offline on the replay recordings:
// `python3 scripts/dev/surrogate-study.py` (results/sweeps/README.md).
//
// The kernel matrix depends only on which points were measured, not on their times,
// so its Cholesky factor grows by one row per measurement, and each candidate keeps
// L^-1 k(measured, candidate) up to date: adding a point costs O(space x measured),
// a ranking the same, with no refactorization.
#pragma once

#include <cstddef>
#include <vector>

#include "tuning/strategy.h"

namespace sdspeed {

struct SurrogateSettings {
  double lengthScale = 0.5;
  double cross = 0.2;
  double noise = 0.05;  // a variance, added to the kernel's diagonal
};

class GpSurrogate {
 public:
  explicit GpSurrogate(const std::vector<Candidate>& space, SurrogateSettings settings = {});

  // A measured point; cost: its median time, +inf when it failed (it then counts as
  // twice as slow as the slowest measured point, so the model steers away from it).
  void add(size_t index, double cost);
  size_t measured() const { return measured_.size(); }

  // The unmeasured point with the largest expected improvement (the lowest index on a
  // tie), or -1 when every point is measured.
  long bestExpectedImprovement() const;

  // The posterior mean and standard deviation of a point's standardized log-time
  // (for tests).
  void predict(size_t index, double& mean, double& sd) const;

 private:
  double kernel(size_t a, size_t b) const;
  std::vector<double> standardizedTargets() const;
  std::vector<double> solveLower(const std::vector<double>& rhs) const;
  // Posterior mean (v . z, with z = L^-1 y) and standard deviation of one candidate.
  void posterior(size_t index, const std::vector<double>& z, double& mean, double& sd) const;

  SurrogateSettings s_;
  std::vector<int> variant_;               // per candidate: variant id
  std::vector<std::vector<double>> pos_;   // per candidate: scaled parameter positions
  std::vector<size_t> measured_;           // in the order added
  std::vector<double> cost_;               // per measured point
  std::vector<char> isMeasured_;           // per candidate
  std::vector<std::vector<double>> L_;     // Cholesky rows of K + noise I
  std::vector<std::vector<double>> v_;     // per candidate: L^-1 k(measured, candidate)
  std::vector<double> vNorm2_;             // per candidate: |v|^2
};

}  // namespace sdspeed
