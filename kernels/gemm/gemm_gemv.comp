#version 450
// GEMM / Linear for a few positions (B*H*W <= 8: GemmFamily::kMaxGemvPositions),
// the gemv variant of gemm.cl (and its half twin gemv_f16):
//   y[b, o, t] = epilogue(sum_k x[b, k, t] w[r, k] + bias[r]) (+ residual[b, o, t])
// The time embedding's Linears (M = B = 2, K and F 320 to 1280) are its reason: there
// gemm.comp has an invocation per output walking all of K alone, and the tiled and
// coopmat tiles are mostly empty (an H100: direct_f16 80 to 166 us, coopmat_f16 with
// split-K 18 to 21 us, for 3.3 MB of f16 weights: results/vulkan/session44/README.md).
// A work-group of WG invocations per (4 output channels, position, sample): invocation i
// takes the chunks of 8 channels i, i + WG, ... of K (neighbours read neighbouring 16
// bytes of each weight row: one load each with f16 weights, WVEC), the partial sums meet
// in shared memory (a tree: WG a power of two), and invocations 0..3 run the epilogue of
// one output channel each. GEGLU (PAIRS = 2): the gate rows F + o beside the hidden ones.
// f16 arithmetic (gemv_f16): each chunk's 8 products summed in afp, those sums in float
// (gemm.comp's direct_f16 scheme with HK = 2: the error stays ~u of the output at any K);
// the epilogue in afp on the float sum rounded once. NC4HW4 padding lanes written 0.
#include "../common/prelude.glsl"
#include "../common/act.glsl"
#include "../common/weights.glsl"

layout(local_size_x_id = 0) in;             // WG, a power of two
layout(constant_id = 1) const uint PAIRS = 1;  // 2 under GEGLU
layout(constant_id = 2) const uint WVEC = 0;   // 1: f16 weights and K % 8 == 0, a chunk is one uvec4

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
SD_WEIGHT_BUFFER(1, W, w)                                         // in SD_WFMT (weights.glsl)
layout(std430, binding = 1) readonly buffer WO { uvec4 wo[]; };  // w again, as 8-half chunks (WVEC = 1)
SD_WEIGHT_BUFFER(2, Bias, wbias)                                  // in SD_PFMT
layout(std430, binding = 3) readonly buffer R { sfp res[]; };
layout(std430, binding = 4) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint K, F, HW, epi, flags, layout_;  // flags: 1 bias, 2 residual
} p;

shared float red[gl_WorkGroupSize.x * 8u];  // [row slot (4 hidden, 4 gate)][invocation]

void main() {
  const uint i = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  const uint s = gl_WorkGroupID.x, t = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  uint rows[8];  // hidden rows 4s .. 4s + 3, then (GEGLU) their gate rows; past F: row F - 1, not stored
  [[unroll]] for (uint r = 0u; r < 4u; ++r) {
    rows[r] = min(4u * s + r, p.F - 1u);
    rows[4u + r] = p.F + rows[r];
  }
  float acc[8];
  [[unroll]] for (uint r = 0u; r < 8u; ++r) acc[r] = 0.0;
  const uint chunks = (p.K + 7u) / 8u;
  for (uint c = i; c < chunks; c += WG) {
    afp xv[8];
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      const uint k = 8u * c + j;
      const bool ok = k < p.K;
      const uint at = sd_index(p.layout_, b, k, t, p.K, p.HW);
      const afp v = afp(x[SD_GUARD(ok, at)]);
      xv[j] = ok ? v : afp(0.0);
    }
    [[unroll]] for (uint r = 0u; r < 4u * PAIRS; ++r) {
      float wv[8];
      if (WVEC == 1u) {
        const uvec4 q = wo[(rows[r] * p.K) / 8u + c];
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          const vec2 h2 = unpackHalf2x16(q[j]);
          wv[2u * j] = h2.x;
          wv[2u * j + 1u] = h2.y;
        }
      } else {
        [[unroll]] for (uint j = 0u; j < 8u; ++j) {
          const uint k = min(8u * c + j, p.K - 1u);  // past K: xv is 0
          wv[j] = w_w(rows[r], k, p.K);
        }
      }
      afp part = afp(0.0);
      [[unroll]] for (uint j = 0u; j < 8u; ++j) part += xv[j] * afp(wv[j]);
      acc[r] += float(part);
    }
  }
  [[unroll]] for (uint r = 0u; r < 8u; ++r) red[r * WG + i] = acc[r];
  barrier();
  for (uint n = WG / 2u; n > 0u; n >>= 1u) {
    if (i < n) {
      [[unroll]] for (uint r = 0u; r < 4u * PAIRS; ++r) red[r * WG + i] += red[r * WG + i + n];
    }
    barrier();
  }
  if (i >= 4u) return;
  const uint o = 4u * s + i;
  if (o >= p.F) {
    if (p.layout_ == SD_NC4HW4) y[sd_index(p.layout_, b, o, t, p.F, p.HW)] = sfp(0.0);
    return;
  }
  const bool hasBias = (p.flags & 1u) != 0u;
  const afp h = afp(red[i * WG] + (hasBias ? wbias_p(o) : 0.0));
  afp out_;
  if (PAIRS == 2u) {
    const afp g = afp(red[(4u + i) * WG] + (hasBias ? wbias_p(p.F + o) : 0.0));
    out_ = h * gelu(g);
  } else {
    out_ = p.epi == 0u ? h : apply(h, p.epi - 1u);
  }
  if ((p.flags & 2u) != 0u) out_ += afp(res[sd_index(p.layout_, b, o, t, p.F, p.HW)]);
  y[sd_index(p.layout_, b, o, t, p.F, p.HW)] = sfp(out_);
}
