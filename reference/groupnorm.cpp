#include "reference/groupnorm.h"

#include <Eigen/Core>
#include <cmath>

#include "runtime/error.h"

namespace sdspeed {

std::vector<double> groupNormReference(const Shape& s, const GroupNormAttrs& a,
                                       const std::vector<float>& x, const std::vector<float>& gamma,
                                       const std::vector<float>& beta,
                                       const std::vector<float>& residual) {
  if (a.groups <= 0 || s.c % a.groups != 0)
    throw Error("groupnorm: C=" + std::to_string(s.c) + " is not divisible by G=" +
                std::to_string(a.groups));
  const int64_t cpg = s.c / a.groups, hw = s.hw(), block = cpg * hw;
  std::vector<double> y(static_cast<size_t>(s.elements()));
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t g = 0; g < a.groups; ++g) {
      const int64_t off = (n * s.c + g * cpg) * hw;
      // One group is contiguous in NCHW: view it as a cpg x hw matrix (row-major).
      Eigen::Map<const Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> xf(
          x.data() + off, cpg, hw);
      Eigen::ArrayXXd xd = xf.cast<double>();
      const double mean = xd.mean();
      const double var = (xd - mean).square().sum() / static_cast<double>(block);  // two-pass, exact enough
      const double rstd = 1.0 / std::sqrt(var + a.eps);
      for (int64_t c = 0; c < cpg; ++c) {
        const int64_t ch = g * cpg + c;
        for (int64_t i = 0; i < hw; ++i) {
          double v = (xd(c, i) - mean) * rstd * gamma[ch] + beta[ch];
          if (a.silu) v = v / (1.0 + std::exp(-v));
          const size_t idx = static_cast<size_t>(off + c * hw + i);
          if (a.residual) v += residual[idx];
          y[idx] = v;
        }
      }
    }
  }
  return y;
}

}  // namespace sdspeed
