// Ground truth for multi-head attention, computed in double.
#pragma once

#include <cstdint>
#include <vector>

namespace sdspeed {

// out = softmax(Q K^T * scale + mask) V per batch and head. q, k, v and the result
// are logical NCHW token tensors [B, H*D, 1, S|L] (heads interleaved in the
// channels); mask (empty or [B, 1, S, L]) is added to the scaled scores; causal masks
// keys l > s. Rows are reduced with the max subtracted, so large logits are exact.
struct AttentionDims {
  int64_t batch = 1, heads = 1, headDim = 1, queries = 1, keys = 1;
};
std::vector<double> attentionReference(const AttentionDims& d, double scale, bool causal,
                                       const std::vector<float>& q, const std::vector<float>& k,
                                       const std::vector<float>& v, const std::vector<float>& mask);

}  // namespace sdspeed
