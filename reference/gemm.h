// Ground truth for the GEMM / Linear family, computed in double.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor_desc.h"

namespace sdspeed {

// y[b, o, t] = epilogue(sum_k x[b, k, t] w[r, k] + bias[r]) (+ residual[b, o, t]),
// t over the H*W positions of x = [B, K, H, W] (a token tensor is Bx Kx1xT), w the
// Linear weight [rows, K] (out x in, row-major), bias empty or [rows]. epilogue:
// none, gelu (erf), gelu_tanh, quick_gelu, silu: y has rows channels; geglu: y has
// F = rows / 2 channels, y = (hidden + bias_h) * gelu(gate + bias_g) with hidden =
// rows [0, F), gate = rows [F, 2F) (diffusers GEGLU). residual: empty or y's shape,
// added last. NCHW arrays. Throws Error for an unknown epilogue or odd rows with geglu.
std::vector<double> gemmReference(const Shape& x, int64_t rows, const std::string& epilogue,
                                  const std::vector<float>& xdata, const std::vector<float>& w,
                                  const std::vector<float>& bias, const std::vector<float>& residual);

}  // namespace sdspeed
