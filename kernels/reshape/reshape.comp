#version 450
// Reshape on Vulkan (reshape.cl is the OpenCL body): H and W regrouped, the position
// hw = h * W + w unchanged, so in buffer storage x and y have the same bytes: a copy in
// the storage type (exact) of every stored channel, NC4HW4 padding lanes written 0.
#include "../common/prelude.glsl"

layout(local_size_x_id = 0) in;  // WG
layout(constant_id = 1) const uint ITEMS = 1;

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
layout(std430, binding = 1) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint C, HW, layout_;
} p;

void main() {
  const uint c = gl_GlobalInvocationID.y, n = gl_GlobalInvocationID.z;
  const uint first = gl_GlobalInvocationID.x * ITEMS;
  for (uint i = 0u; i < ITEMS; ++i) {
    const uint hw = first + i;
    if (hw >= p.HW) return;
    const uint at = sd_index(p.layout_, n, c, hw, p.C, p.HW);
    // Through float: 16-bit storage allows no float16_t locals, and f16 -> f32 -> f16 is exact.
    y[at] = sfp(c < p.C ? float(x[at]) : 0.0);
  }
}
