#version 450
// Channel concatenation on Vulkan (concat.cl is the OpenCL body): y = [a; b] along C,
// a [N, C1, H, W], b [N, C2, H, W]. An invocation per (ITEMS positions, stored output
// channel, sample), so C1 need not be a multiple of 4; a copy in the storage type
// (exact), NC4HW4 padding lanes 0.
#include "../common/prelude.glsl"

layout(local_size_x_id = 0) in;  // WG
layout(constant_id = 1) const uint ITEMS = 1;

layout(std430, binding = 0) readonly buffer A { sfp a[]; };
layout(std430, binding = 1) readonly buffer B { sfp b[]; };
layout(std430, binding = 2) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint C1, C2, HW, layout_;
} p;

void main() {
  const uint c = gl_GlobalInvocationID.y, n = gl_GlobalInvocationID.z, yC = p.C1 + p.C2;
  const uint first = gl_GlobalInvocationID.x * ITEMS;
  for (uint i = 0u; i < ITEMS; ++i) {
    const uint hw = first + i;
    if (hw >= p.HW) return;
    // Through float: 16-bit storage allows no float16_t locals, and f16 -> f32 -> f16 is exact.
    float v = 0.0;
    if (c < p.C1) v = float(a[sd_index(p.layout_, n, c, hw, p.C1, p.HW)]);
    else if (c < yC) v = float(b[sd_index(p.layout_, n, c - p.C1, hw, p.C2, p.HW)]);
    y[sd_index(p.layout_, n, c, hw, yC, p.HW)] = sfp(v);
  }
}
