#version 450
// GEMM / Linear on Vulkan, the direct variant of gemm.cl (and its half twin):
//   y[b, o, t] = epilogue(sum_k x[b, k, t] w[r, k] + bias[r]) (+ residual[b, o, t])
// epi: 0 none, 1 gelu, 2 gelu_tanh, 3 quick_gelu, 4 silu (act.glsl's fn = epi - 1),
// 5 geglu: y has F = R / 2 channels, out = (hidden + bias) * gelu(gate + bias), hidden =
// row o, gate = row F + o. An invocation per (ITEMS positions, stored output channel,
// sample), the K loop in float (w and bias in the op's weight format: weights.glsl). In the
// f16-arithmetic modules (direct_f16) products are summed in afp over HK * 4 channels
// before the float accumulator (gemm.cl says why: all of K in half grows as u sqrt(K)),
// and the epilogue runs in afp. NC4HW4 padding lanes written 0.
#include "../common/prelude.glsl"
#include "../common/act.glsl"
#include "../common/weights.glsl"

layout(local_size_x_id = 0) in;  // WG
layout(constant_id = 1) const uint ITEMS = 1;
layout(constant_id = 2) const uint HK = 4;  // direct_f16: K slices of 4 per half sum

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
SD_WEIGHT_BUFFER(1, W, w)         // in SD_WFMT (weights.glsl)
SD_WEIGHT_BUFFER(2, Bias, wbias)  // in SD_PFMT
layout(std430, binding = 3) readonly buffer R { sfp res[]; };
layout(std430, binding = 4) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint K, F, HW, epi, flags, layout_;  // flags: 1 bias, 2 residual
} p;

// sum_k x[b, k, t] w[row, k], in float, or in afp per chunk of HK * 4 channels.
float dotRow(uint b, uint t, uint row) {
  float acc = 0.0;
#if AFP_F16
  const uint chunk = HK * 4u;
  for (uint k0 = 0u; k0 < p.K; k0 += chunk) {
    afp part = afp(0.0);
    for (uint k = k0; k < min(k0 + chunk, p.K); ++k)
      part += afp(x[sd_index(p.layout_, b, k, t, p.K, p.HW)]) * afp(w_w(row, k, p.K));
    acc += float(part);
  }
#else
  for (uint k = 0u; k < p.K; ++k) acc += float(x[sd_index(p.layout_, b, k, t, p.K, p.HW)]) * w_w(row, k, p.K);
#endif
  return acc;
}

void main() {
  const uint o = gl_GlobalInvocationID.y, b = gl_GlobalInvocationID.z;
  const uint first = gl_GlobalInvocationID.x * ITEMS;
  for (uint i = 0u; i < ITEMS; ++i) {
    const uint t = first + i;
    if (t >= p.HW) return;
    afp out_ = afp(0.0);
    if (o < p.F) {
      const bool hasBias = (p.flags & 1u) != 0u;
      afp h = afp(dotRow(b, t, o) + (hasBias ? wbias_p(o) : 0.0));
      if (p.epi == 5u) {
        const afp g = afp(dotRow(b, t, p.F + o) + (hasBias ? wbias_p(p.F + o) : 0.0));
        out_ = h * gelu(g);
      } else {
        out_ = p.epi == 0u ? h : apply(h, p.epi - 1u);
      }
      if ((p.flags & 2u) != 0u) out_ += afp(res[sd_index(p.layout_, b, o, t, p.F, p.HW)]);
    }
    y[sd_index(p.layout_, b, o, t, p.F, p.HW)] = sfp(out_);
  }
}
