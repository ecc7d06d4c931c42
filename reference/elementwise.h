// Ground truth for the elementwise helper ops of the Stable Diffusion pipeline, in
// double, on logical NCHW arrays. Each throws Error for inconsistent arguments.
#pragma once

#include <string>
#include <vector>

#include "runtime/tensor_desc.h"

namespace sdspeed {

// y = a + b or a * b (fn "add" / "mul"); b has a's shape, or [N, C, 1, 1] (one value
// per (n, c), broadcast over H and W).
std::vector<double> binaryReference(const Shape& as, const Shape& bs, const std::string& fn,
                                    const std::vector<float>& a, const std::vector<float>& b);

// Nearest upsampling by an integer factor: y[n, c, h, w] = x[n, c, h / f, w / f].
std::vector<double> upsampleReference(const Shape& x, int factor, const std::vector<float>& xv);

// Channel concatenation: y = [a; b] along C (a's channels first).
std::vector<double> concatReference(const Shape& as, const Shape& bs, const std::vector<float>& a,
                                    const std::vector<float>& b);

// Throws Error unless every id is an integer in [0, vocab).
void checkTokenIds(const std::vector<float>& ids, int64_t vocab);

// CLIP embeddings: y[b, c, 0, s] = tok[ids[b, s], c] + pos[s, c]; y is [B, C, 1, S],
// ids [B, 1, 1, S], tok [V, C] and pos [P, C] row-major (P >= S).
std::vector<double> embeddingReference(const Shape& y, int64_t vocab, const std::vector<float>& ids,
                                       const std::vector<float>& tok, const std::vector<float>& pos);

// diffusers get_timestep_embedding(t, dim, flip_sin_to_cos, downscale_freq_shift,
// scale=1, max_period): half = dim / 2, freq_j = exp(-ln(max_period) j / (half - shift)),
// y[b] = [sin(t freq), cos(t freq)] (flipped: [cos, sin]), a zero column if dim is odd.
// Returns [B, dim] row-major, which is the NCHW array of a [B, dim, 1, 1] tensor.
std::vector<double> timestepReference(const std::vector<float>& t, int64_t dim, bool flip, double shift,
                                      double maxPeriod = 10000.0);

}  // namespace sdspeed
