// Ground truth for softmax over channels, computed in double with Eigen.
#pragma once

#include <vector>

#include "runtime/tensor_desc.h"

namespace sdspeed {

// y[n, :, t] = exp(scale * x[n, :, t] - max) / sum over the C channels of token t. NCHW.
std::vector<double> softmaxReference(const Shape& shape, double scale, const std::vector<float>& x);

}  // namespace sdspeed
