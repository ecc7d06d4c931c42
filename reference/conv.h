// Ground truth for 2-D convolution (+ bias, time embedding, residual), in double.
#pragma once

#include <cstdint>
#include <vector>

namespace sdspeed {

struct ConvDims {
  int64_t batch = 1, cin = 1, height = 1, width = 1, cout = 1, kernel = 3, stride = 1, pad = 1;
  int64_t outHeight() const { return (height + 2 * pad - kernel) / stride + 1; }
  int64_t outWidth() const { return (width + 2 * pad - kernel) / stride + 1; }
};

// y[n, co, oy, ox] = sum_{ci, ky, kx} w[co, ci, ky, kx] * x[n, ci, oy*s - p + ky, ox*s - p + kx]
//                    + bias[co] + temb[n, co] + residual[n, co, oy, ox]
// (zero padding; an empty bias, temb or residual is left out). x, w and the result
// are logical NCHW; computed as im2col + GEMM over chunks of output positions.
std::vector<double> convReference(const ConvDims& d, const std::vector<float>& x, const std::vector<float>& w,
                                  const std::vector<float>& bias, const std::vector<float>& temb,
                                  const std::vector<float>& residual);

}  // namespace sdspeed
