#version 450
// The sinusoidal timestep embedding on Vulkan (timestep.cl is the OpenCL body), as
// diffusers get_timestep_embedding(t, dim, flip_sin_to_cos, downscale_freq_shift):
//   half = dim / 2, freq_j = exp(-ln(10000) * j / (half - shift)), arg = t * freq_j,
//   y = [sin(arg), cos(arg)], or [cos(arg), sin(arg)] when flipped, and a zero last
//   column when dim is odd. The same float operations in the same order as timestep.cl.
// t [B] is an f32 host input; y [B, dim, 1, 1] is in the run's storage (NCHW or NC4HW4,
// padding lanes written 0). An invocation per (stored channel, sample).
//
// sin and cos get arguments up to ~1000. Vulkan only bounds GLSL's sin/cos inside
// [-pi, pi] (absolute 2^-11) and GPUs' fast paths reduce large arguments coarsely, so
// the argument is first reduced by 2 pi here, Cody-Waite style (k * 2pi in two parts,
// the high one with few enough bits that k * hi is exact for k < 2^10): the result is
// then sin of the float argument itself, as timestep.cl's correctly reduced sin gives.
#include "../common/prelude.glsl"

layout(local_size_x_id = 0) in;  // WG

layout(std430, binding = 0) readonly buffer T { float t[]; };
layout(std430, binding = 1) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint C, layout_;
  float shift;
  uint flip;
} p;

// x - 2 pi round(x / 2 pi), for |x| up to a few thousand.
float reduce2pi(float x) {
  const float hi = 6.28125;                  // 2 pi's leading 9 bits: k * hi exact
  const float lo = 1.9353071795864769e-3;   // 2 pi - hi
  const float k = floor(x * 0.15915494309189535 + 0.5);
  return fma(-k, lo, fma(-k, hi, x));
}

void main() {
  const uint c = gl_GlobalInvocationID.x, n = gl_GlobalInvocationID.y;
  if (c >= sd_stored_channels(p.layout_, p.C)) return;
  const uint nh = p.C / 2u;  // diffusers' half_dim
  float v = 0.0;  // the odd-dim column and NC4HW4 lanes past dim
  if (c < 2u * nh) {
    const uint j = c < nh ? c : c - nh;
    const float arg = t[n] * exp(-9.210340371976184 * float(j) / (float(nh) - p.shift));  // ln 10000
    const float r = reduce2pi(arg);
    v = (c < nh) != (p.flip != 0u) ? sin(r) : cos(r);  // sin first unless flipped
  }
  y[sd_index(p.layout_, n, c, 0u, p.C, 1u)] = sfp(v);
}
