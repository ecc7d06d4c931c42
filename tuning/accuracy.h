// Comparing a kernel's output with the double-precision reference.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/family.h"

namespace sdspeed {

struct Comparison {
  double maxAbsErr = 0;   // over finite elements
  double relL2 = 0;       // ||out - ref|| / ||ref||
  size_t nonFinite = 0;   // NaN/Inf: the output is poisoned with NaN, so also "not written"
  size_t overTolerance = 0;
  size_t firstBad = 0;    // index of the first failing element (if any)
  bool pass(const Tolerance& t) const {
    return nonFinite == 0 && overTolerance == 0 && relL2 <= t.relL2;
  }
};

Comparison compareToReference(const std::vector<float>& out, const std::vector<double>& ref,
                              const Tolerance& tol);

}  // namespace sdspeed
