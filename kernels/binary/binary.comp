#version 450
// The binary family on Vulkan (binary.cl is the OpenCL body): y = a + b (fn 0) or a * b
// (fn 1); broadcast = 1 makes b [N, C, 1, 1], one value per sample and channel. An
// invocation per (ITEMS positions, stored channel, sample); NC4HW4 padding lanes are
// written 0. One add or multiply in afp: float (correctly rounded, as in OpenCL), or
// float16_t in the f16-arithmetic modules (the slices_f16 variant).
#include "../common/prelude.glsl"

layout(local_size_x_id = 0) in;  // WG
layout(constant_id = 1) const uint ITEMS = 1;

layout(std430, binding = 0) readonly buffer A { sfp a[]; };
layout(std430, binding = 1) readonly buffer B { sfp b[]; };
layout(std430, binding = 2) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint C, HW, fn, broadcast, layout_;
} p;

void main() {
  const uint c = gl_GlobalInvocationID.y, n = gl_GlobalInvocationID.z;
  const uint first = gl_GlobalInvocationID.x * ITEMS;
  for (uint i = 0u; i < ITEMS; ++i) {
    const uint hw = first + i;
    if (hw >= p.HW) return;
    afp out_ = afp(0.0);
    if (c < p.C) {
      const afp av = afp(a[sd_index(p.layout_, n, c, hw, p.C, p.HW)]);
      const afp bv = afp(b[p.broadcast != 0u ? sd_index(p.layout_, n, c, 0u, p.C, 1u)
                                             : sd_index(p.layout_, n, c, hw, p.C, p.HW)]);
      out_ = p.fn == 1u ? av * bv : av + bv;
    }
    y[sd_index(p.layout_, n, c, hw, p.C, p.HW)] = sfp(out_);
  }
}
