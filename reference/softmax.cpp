#include "reference/softmax.h"

#include <Eigen/Core>

namespace sdspeed {

std::vector<double> softmaxReference(const Shape& s, double scale, const std::vector<float>& x) {
  const int64_t hw = s.hw();
  std::vector<double> y(static_cast<size_t>(s.elements()));
  for (int64_t n = 0; n < s.n; ++n) {
    Eigen::Map<const Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> xf(
        x.data() + n * s.c * hw, s.c, hw);
    const Eigen::ArrayXXd z = xf.cast<double>() * scale;
    for (int64_t t = 0; t < hw; ++t) {
      const Eigen::ArrayXd e = (z.col(t) - z.col(t).maxCoeff()).exp();
      const Eigen::ArrayXd out = e / e.sum();
      for (int64_t c = 0; c < s.c; ++c) y[static_cast<size_t>((n * s.c + c) * hw + t)] = out[c];
    }
  }
  return y;
}

}  // namespace sdspeed
