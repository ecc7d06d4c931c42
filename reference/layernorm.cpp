#include "reference/layernorm.h"

#include <Eigen/Core>
#include <cmath>

namespace sdspeed {

std::vector<double> layerNormReference(const Shape& s, double eps, const std::vector<float>& x,
                                       const std::vector<float>& gamma, const std::vector<float>& beta) {
  const int64_t hw = s.hw();
  std::vector<double> y(static_cast<size_t>(s.elements()));
  const Eigen::Map<const Eigen::ArrayXf> g(gamma.data(), s.c), b(beta.data(), s.c);
  for (int64_t n = 0; n < s.n; ++n) {
    // Sample n as a C x HW matrix (row-major): a token is one column.
    Eigen::Map<const Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> xf(
        x.data() + n * s.c * hw, s.c, hw);
    const Eigen::ArrayXXd xd = xf.cast<double>();
    for (int64_t t = 0; t < hw; ++t) {
      const Eigen::ArrayXd col = xd.col(t);
      const double mean = col.mean();
      const double var = (col - mean).square().mean();
      const Eigen::ArrayXd out = (col - mean) / std::sqrt(var + eps) * g.cast<double>() + b.cast<double>();
      for (int64_t c = 0; c < s.c; ++c) y[static_cast<size_t>((n * s.c + c) * hw + t)] = out[c];
    }
  }
  return y;
}

}  // namespace sdspeed
