#include "tuning/accuracy.h"

#include <cmath>

namespace sdspeed {

Comparison compareToReference(const std::vector<float>& out, const std::vector<double>& ref,
                              const Tolerance& tol) {
  Comparison c;
  double diff2 = 0, ref2 = 0;
  bool seenBad = false;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double r = ref[i];
    ref2 += r * r;
    const double o = i < out.size() ? out[i] : NAN;
    if (!std::isfinite(o)) {
      ++c.nonFinite;
      if (!seenBad) c.firstBad = i, seenBad = true;
      continue;
    }
    const double e = std::abs(o - r);
    diff2 += e * e;
    if (e > c.maxAbsErr) c.maxAbsErr = e;
    if (e > tol.atol + tol.rtol * std::abs(r)) {
      ++c.overTolerance;
      if (!seenBad) c.firstBad = i, seenBad = true;
    }
  }
  c.relL2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (c.nonFinite) c.relL2 = INFINITY;
  return c;
}

}  // namespace sdspeed
