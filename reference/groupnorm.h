// Ground truth for GroupNorm (+SiLU, +residual), computed in double with Eigen.
#pragma once

#include <vector>

#include "runtime/tensor_desc.h"

namespace sdspeed {

struct GroupNormAttrs {
  int groups = 32;
  double eps = 1e-5;
  bool silu = false;
  bool residual = false;
};

// y = act((x - mean_g) / sqrt(var_g + eps) * gamma_c + beta_c) + residual, where
// mean_g / var_g (biased, as PyTorch) run over the C/G channels and H*W positions of
// group g, act is SiLU (x * sigmoid(x)) when attrs.silu, and residual is added when
// attrs.residual. x and residual are NCHW, gamma and beta hold C values.
std::vector<double> groupNormReference(const Shape& shape, const GroupNormAttrs& attrs,
                                       const std::vector<float>& x, const std::vector<float>& gamma,
                                       const std::vector<float>& beta,
                                       const std::vector<float>& residual);

}  // namespace sdspeed
