#version 450
// Nearest-neighbour upsampling on Vulkan (upsample.cl is the OpenCL body):
// y[n, c, h, w] = x[n, c, h / F, w / F]. An invocation per (ITEMS output positions,
// stored channel, sample); a copy in the storage type (exact), NC4HW4 padding lanes 0.
#include "../common/prelude.glsl"

layout(local_size_x_id = 0) in;  // WG
layout(constant_id = 1) const uint ITEMS = 1;

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
layout(std430, binding = 1) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint C, W, HW, F, layout_;  // the input's C, W and H*W; the factor F
} p;

void main() {
  const uint c = gl_GlobalInvocationID.y, n = gl_GlobalInvocationID.z;
  const uint yW = p.W * p.F, yHW = p.HW * p.F * p.F;
  const uint first = gl_GlobalInvocationID.x * ITEMS;
  for (uint i = 0u; i < ITEMS; ++i) {
    const uint hw = first + i;
    if (hw >= yHW) return;
    const uint h = hw / yW, w = hw % yW;
    // Through float: 16-bit storage allows no float16_t locals, and f16 -> f32 -> f16 is exact.
    const float v = c < p.C ? float(x[sd_index(p.layout_, n, c, (h / p.F) * p.W + w / p.F, p.C, p.HW)]) : 0.0;
    y[sd_index(p.layout_, n, c, hw, p.C, yHW)] = sfp(v);
  }
}
