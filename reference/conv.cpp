#include "reference/conv.h"

#include <Eigen/Dense>
#include <algorithm>

namespace sdspeed {

std::vector<double> convReference(const ConvDims& d, const std::vector<float>& x, const std::vector<float>& w,
                                  const std::vector<float>& bias, const std::vector<float>& temb,
                                  const std::vector<float>& residual) {
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int64_t Ho = d.outHeight(), Wo = d.outWidth(), P = Ho * Wo, KK = d.kernel * d.kernel;
  const int64_t K = d.cin * KK, HW = d.height * d.width;
  const RowMajor W = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                         w.data(), d.cout, K)
                         .cast<double>();
  std::vector<double> y(static_cast<size_t>(d.batch * d.cout * P), 0.0);
  const int64_t chunk = 2048;  // output positions per im2col block: bounded memory
  RowMajor col(K, chunk);
  for (int64_t n = 0; n < d.batch; ++n) {
    const float* xn = x.data() + n * d.cin * HW;
    for (int64_t p0 = 0; p0 < P; p0 += chunk) {
      const int64_t np = std::min(chunk, P - p0);
      for (int64_t ci = 0; ci < d.cin; ++ci)
        for (int64_t ky = 0; ky < d.kernel; ++ky)
          for (int64_t kx = 0; kx < d.kernel; ++kx) {
            const int64_t k = ci * KK + ky * d.kernel + kx;
            for (int64_t j = 0; j < np; ++j) {
              const int64_t p = p0 + j, oy = p / Wo, ox = p % Wo;
              const int64_t iy = oy * d.stride - d.pad + ky, ix = ox * d.stride - d.pad + kx;
              const bool in = iy >= 0 && iy < d.height && ix >= 0 && ix < d.width;
              col(k, j) = in ? static_cast<double>(xn[ci * HW + iy * d.width + ix]) : 0.0;
            }
          }
      const RowMajor out = W * col.leftCols(np);
      for (int64_t co = 0; co < d.cout; ++co) {
        double add = bias.empty() ? 0.0 : static_cast<double>(bias[static_cast<size_t>(co)]);
        if (!temb.empty()) add += static_cast<double>(temb[static_cast<size_t>(n * d.cout + co)]);
        for (int64_t j = 0; j < np; ++j) {
          const size_t idx = static_cast<size_t>((n * d.cout + co) * P + p0 + j);
          double v = out(co, j) + add;
          if (!residual.empty()) v += static_cast<double>(residual[idx]);
          y[idx] = v;
        }
      }
    }
  }
  return y;
}

}  // namespace sdspeed
