#version 450
// The activation family on Vulkan (kernels/activation/activation.cl is the OpenCL body;
// the functions and their fn codes are the same):
//   0 gelu        0.5 x (1 + erf(x / sqrt 2))
//   1 gelu_tanh   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//   2 quick_gelu  x sigmoid(1.702 x)
//   3 silu        x sigmoid(x)
//   4 geglu       hidden * gelu(gate), hidden = channels [0, F), gate = [F, 2F)
// An invocation per (ITEMS positions, stored output channel, sample); channels past F
// (NC4HW4 padding lanes) are written 0. GLSL has no erf, so GELU uses erfc from
// Numerical Recipes' Chebyshev fit (fractional error < 1.2e-7 everywhere), which keeps
// x * erfc(-x / sqrt 2) / 2 accurate to ~1e-7 relative in both tails. Arithmetic in afp
// (float, or float16_t in the slices_f16 modules), with one exception: that erfc fit is
// evaluated in float, since its ten-term polynomial in half would lose about 1e-2.
#include "../common/prelude.glsl"

layout(local_size_x_id = 0) in;            // WG
layout(constant_id = 1) const uint ITEMS = 1;

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
layout(std430, binding = 1) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint C, HW, F, fn, layout_;  // x has C channels, y has F (C, or C / 2 for geglu)
} p;

#include "../common/act.glsl"

void main() {
  const uint c = gl_GlobalInvocationID.y, n = gl_GlobalInvocationID.z;
  const uint first = gl_GlobalInvocationID.x * ITEMS;
  for (uint i = 0u; i < ITEMS; ++i) {
    const uint hw = first + i;
    if (hw >= p.HW) return;
    afp out_ = afp(0.0);
    if (c < p.F) {
      if (p.fn == 4u) {
        const afp hidden = afp(x[sd_index(p.layout_, n, c, hw, p.C, p.HW)]);
        const afp gate = afp(x[sd_index(p.layout_, n, p.F + c, hw, p.C, p.HW)]);
        out_ = hidden * gelu(gate);
      } else {
        out_ = apply(afp(x[sd_index(p.layout_, n, c, hw, p.C, p.HW)]), p.fn);
      }
    }
    y[sd_index(p.layout_, n, c, hw, p.F, p.HW)] = sfp(out_);
  }
}
