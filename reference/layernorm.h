// Ground truth for LayerNorm over channels, computed in double with Eigen.
#pragma once

#include <vector>

#include "runtime/tensor_desc.h"

namespace sdspeed {

// y[n, c, t] = (x[n, c, t] - mean_{n,t}) / sqrt(var_{n,t} + eps) * gamma[c] + beta[c],
// mean and (biased) variance over the C channels of token t = h * W + w. NCHW arrays.
std::vector<double> layerNormReference(const Shape& shape, double eps, const std::vector<float>& x,
                                       const std::vector<float>& gamma, const std::vector<float>& beta);

}  // namespace sdspeed
