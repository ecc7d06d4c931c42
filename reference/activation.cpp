#include "reference/activation.h"

#include <Eigen/Core>
#include <cmath>

#include "runtime/error.h"

namespace sdspeed {
namespace {

double gelu(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }

}  // namespace

std::vector<double> activationReference(const Shape& s, const std::string& fn, const std::vector<float>& x) {
  const Eigen::ArrayXd xd = Eigen::Map<const Eigen::ArrayXf>(x.data(), static_cast<Eigen::Index>(x.size())).cast<double>();
  if (fn == "geglu") {
    if (s.c % 2) throw Error("geglu needs an even channel count, got C=" + std::to_string(s.c));
    const int64_t F = s.c / 2, hw = s.hw();
    std::vector<double> y(static_cast<size_t>(s.n * F * hw));
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t c = 0; c < F; ++c)
        for (int64_t t = 0; t < hw; ++t)
          y[static_cast<size_t>((n * F + c) * hw + t)] =
              xd[(n * s.c + c) * hw + t] * gelu(xd[(n * s.c + F + c) * hw + t]);
    return y;
  }
  Eigen::ArrayXd y;
  if (fn == "gelu") y = xd.unaryExpr([](double v) { return gelu(v); });
  else if (fn == "gelu_tanh")
    y = 0.5 * xd * (1.0 + (std::sqrt(2.0 / M_PI) * (xd + 0.044715 * xd.cube())).tanh());
  else if (fn == "quick_gelu") y = xd / (1.0 + (-1.702 * xd).exp());
  else if (fn == "silu") y = xd / (1.0 + (-xd).exp());
  else throw Error("unknown activation '" + fn + "' (known: gelu, gelu_tanh, quick_gelu, silu, geglu)");
  return {y.data(), y.data() + y.size()};
}

}  // namespace sdspeed
