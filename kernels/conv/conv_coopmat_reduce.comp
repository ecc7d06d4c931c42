#version 450
// Split-K's second pass for conv coopmat_f16 (SK > 1; kernels/conv/conv_coopmat_vulkan.cpp,
// kernels/conv/README.md): conv_coopmat.comp's work-groups of K range ks stored their raw
// f32 sums to part[ks][b][co][n] (CoutP = Cout rounded up to 4 rows of co per sample,
// n = oy * Wo + ox); this pass
// adds the SK of each output in f32, in the fixed order ks = 0, 1, .. (the result does not
// depend on scheduling), then applies conv_coopmat.comp's epilogue unchanged: bias, temb,
// residual in conv.cl's order, in f32; NC4HW4's pad channels written 0; y in the pushed
// layout (a constant, as conv_coopmat.comp's). One invocation per stored output element: work-groups of WG positions (x),
// one output channel (y), one sample (z), as the elementwise shaders' channelGrid.
// Same bindings and push constants as conv_coopmat.comp, so one set serves both passes.
#include "../common/prelude.glsl"
#include "../common/weights.glsl"

layout(local_size_x_id = 0) in;              // WG positions per work-group
layout(constant_id = 1) const uint SK = 2;   // the partial sums per output (conv_coopmat.comp's SK)
layout(constant_id = 2) const uint LAYOUT = 0;  // SD_NCHW or SD_NC4HW4 (conv_coopmat.comp's LAYOUT)

SD_WEIGHT_BUFFER(2, Bias, wbias)  // in SD_PFMT
layout(std430, binding = 3) readonly buffer Temb { sfp temb[]; };
layout(std430, binding = 4) readonly buffer Res { sfp res[]; };
layout(std430, binding = 5) writeonly buffer Y { sfp y[]; };
layout(std430, binding = 6) readonly buffer Part { float part[]; };
layout(push_constant) uniform Push {
  uint Cin, H, W, Cout, Ho, Wo, flags;  // conv_coopmat.comp's: flags 1 bias, 2 temb, 4 residual
} p;

void main() {
  const uint n = gl_GlobalInvocationID.x, co = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const uint HoWo = p.Ho * p.Wo, N = gl_NumWorkGroups.z;
  if (n >= HoWo) return;  // the last work-group's tail
  const uint coutP = (p.Cout + 3u) / 4u * 4u;
  float v = 0.0;  // pad channels (co >= Cout) stay 0
  if (co < p.Cout) {
    [[unroll]] for (uint ks = 0u; ks < SK; ++ks) v += part[((ks * N + b) * coutP + co) * HoWo + n];
    if ((p.flags & 1u) != 0u) v += wbias_p(co);
    if ((p.flags & 2u) != 0u) v += float(temb[sd_index(LAYOUT, b, co, 0u, p.Cout, 1u)]);
    if ((p.flags & 4u) != 0u) v += float(res[sd_index(LAYOUT, b, co, n, p.Cout, HoWo)]);
  }
  y[sd_index(LAYOUT, b, co, n, p.Cout, HoWo)] = sfp(v);
}
