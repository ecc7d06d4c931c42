#version 450
// Split-K's second pass for gemm coopmat_f16 (SK > 1; kernels/gemm/gemm_coopmat_vulkan.cpp,
// kernels/gemm/README.md): gemm_coopmat.comp's work-groups of K range ks stored their raw
// f32 sums to part[ks][b][row][t] (row: the weight row, PAIRS * F of them); this pass adds
// the SK of each output in f32, in the fixed order ks = 0, 1, .. (the result does not depend
// on scheduling), then applies gemm_coopmat.comp's epilogue unchanged: bias, the activation
// (or GEGLU: hidden * gelu(gate)) in afp, the residual; NC4HW4's pad channels written 0; y
// in the layout (a constant, as gemm_coopmat.comp's). One invocation per stored output
// element: work-groups of WG positions (x), one output channel (y), one sample (z), as the
// elementwise shaders' channelGrid. Same bindings and push constants as gemm_coopmat.comp,
// so one set serves both passes.
#include "../common/prelude.glsl"
#include "../common/act.glsl"
#include "../common/weights.glsl"

layout(local_size_x_id = 0) in;                // WG positions per work-group
layout(constant_id = 1) const uint SK = 2;     // the partial sums per output (gemm_coopmat.comp's SK)
layout(constant_id = 2) const uint LAYOUT = 0;  // SD_NCHW or SD_NC4HW4 (gemm_coopmat.comp's LAYOUT)
layout(constant_id = 3) const uint PAIRS = 1;  // 2 under GEGLU (hidden and gate rows)

SD_WEIGHT_BUFFER(2, Bias, wbias)  // in SD_PFMT
layout(std430, binding = 3) readonly buffer R { sfp res[]; };
layout(std430, binding = 4) writeonly buffer Y { sfp y[]; };
layout(std430, binding = 5) readonly buffer Part { float part[]; };
layout(push_constant) uniform Push {
  uint K, F, HW, epi, flags;  // gemm_coopmat.comp's: flags 1 bias, 2 residual
} p;

// Weight row `row`'s sum over the SK ranges, plus its bias.
float rowSum(uint b, uint N, uint row, uint t) {
  float v = 0.0;
  [[unroll]] for (uint ks = 0u; ks < SK; ++ks) v += part[((ks * N + b) * PAIRS * p.F + row) * p.HW + t];
  return v + ((p.flags & 1u) != 0u ? wbias_p(row) : 0.0);
}

void main() {
  const uint t = gl_GlobalInvocationID.x, o = gl_WorkGroupID.y, b = gl_WorkGroupID.z, N = gl_NumWorkGroups.z;
  if (t >= p.HW) return;  // the last work-group's tail
  float out_ = 0.0;  // pad channels (o >= F) stay 0
  if (o < p.F) {
    const float h = rowSum(b, N, o, t);
    if (PAIRS == 2u) {
      out_ = h * float(gelu(afp(rowSum(b, N, p.F + o, t))));
    } else {
      out_ = p.epi == 0u ? h : float(apply(afp(h), p.epi - 1u));
    }
    if ((p.flags & 2u) != 0u) out_ += float(res[sd_index(LAYOUT, b, o, t, p.F, p.HW)]);
  }
  y[sd_index(LAYOUT, b, o, t, p.F, p.HW)] = sfp(out_);
}
