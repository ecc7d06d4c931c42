#include "reference/gemm.h"

#include <Eigen/Core>
#include <cmath>

#include "runtime/error.h"

namespace sdspeed {
namespace {

using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

double gelu(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }

double activate(double v, int fn) {
  switch (fn) {
    case 1: return gelu(v);
    case 2: return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    case 3: return v / (1.0 + std::exp(-1.702 * v));
    case 4: return v / (1.0 + std::exp(-v));
    default: return v;
  }
}

}  // namespace

std::vector<double> gemmReference(const Shape& x, int64_t rows, const std::string& epilogue,
                                  const std::vector<float>& xdata, const std::vector<float>& w,
                                  const std::vector<float>& bias, const std::vector<float>& residual) {
  int fn = -1;
  const char* names[] = {"none", "gelu", "gelu_tanh", "quick_gelu", "silu", "geglu"};
  for (int i = 0; i < 6; ++i)
    if (epilogue == names[i]) fn = i;
  if (fn < 0) throw Error("unknown gemm epilogue '" + epilogue + "'");
  const bool geglu = fn == 5;
  if (geglu && rows % 2) throw Error("geglu needs an even number of weight rows, got " + std::to_string(rows));
  const int64_t K = x.c, T = x.hw(), out = geglu ? rows / 2 : rows;
  const Eigen::MatrixXd wd = Eigen::Map<const RowMajorF>(w.data(), rows, K).cast<double>();
  Eigen::VectorXd bd = Eigen::VectorXd::Zero(rows);
  if (!bias.empty()) bd = Eigen::Map<const Eigen::VectorXf>(bias.data(), rows).cast<double>();
  std::vector<double> y(static_cast<size_t>(x.n * out * T));
  for (int64_t b = 0; b < x.n; ++b) {
    // x[b] is K x T row-major (channel-major NCHW): the product is rows x T.
    const Eigen::MatrixXd xb = Eigen::Map<const RowMajorF>(xdata.data() + b * K * T, K, T).cast<double>();
    Eigen::MatrixXd z = wd * xb;
    z.colwise() += bd;
    for (int64_t o = 0; o < out; ++o)
      for (int64_t t = 0; t < T; ++t) {
        double v = geglu ? z(o, t) * gelu(z(out + o, t)) : activate(z(o, t), fn);
        const size_t i = static_cast<size_t>((b * out + o) * T + t);
        if (!residual.empty()) v += residual[i];
        y[i] = v;
      }
  }
  return y;
}

}  // namespace sdspeed
