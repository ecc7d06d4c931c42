#version 450
// GroupNorm (+SiLU, +residual) on Vulkan, the one_pass variant of groupnorm.cl:
//   y = act((x - mean_g) * rstd_g * gamma_c + beta_c) + res
// A work-group per (sample, group); its invocations take VEC consecutive elements of
// the group at a time, in chunks strided by WG * VEC. The first CACHE chunks stay in
// registers between the passes (0: every pass re-reads x). The statistics are shifted
// sums: K = the group's first element, sum (x - K), then sum ((x - K) - shift)^2 over the
// (cached or re-read) values, a two-pass variance that keeps its accuracy for any mean.
// NC4HW4 padding lanes (channels C .. stored C) are written 0 by the last group.
// Statistics in float always; in the f16-arithmetic modules (one_pass_f16) the
// per-element math after them (normalize, affine, SiLU, residual) is float16_t, the value
// x - mean formed in float first (half's spacing at a mean of 1000 is 0.5). gamma and
// beta are uint words holding f32 or f16 (weights.glsl's SD_PFMT).
#include "../common/prelude.glsl"
#include "../common/weights.glsl"

layout(local_size_x_id = 0) in;  // WG, a power of two
layout(constant_id = 1) const uint VEC = 4;
layout(constant_id = 2) const uint CACHE = 8;  // VEC * CACHE <= 64 (the declared constraint)

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
SD_WEIGHT_BUFFER(1, G, wgamma)
SD_WEIGHT_BUFFER(2, Bt, wbeta)
layout(std430, binding = 3) readonly buffer R { sfp res[]; };
layout(std430, binding = 4) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint C, HW, G, flags, layout_;  // flags: 1 = SiLU, 2 = residual
  float eps;
} p;

shared float red[gl_WorkGroupSize.x];

float reduceSum(float v) {
  const uint lid = gl_LocalInvocationID.x;
  red[lid] = v;
  barrier();
  for (uint off = gl_WorkGroupSize.x / 2u; off > 0u; off >>= 1u) {
    if (lid < off) red[lid] += red[lid + off];
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}

void main() {
  const uint n = gl_WorkGroupID.x / p.G, g = gl_WorkGroupID.x % p.G;
  const uint cpg = p.C / p.G, E = cpg * p.HW, c0 = g * cpg;
  const uint lid = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x * VEC;
  const float K = float(x[sd_index(p.layout_, n, c0, 0u, p.C, p.HW)]);
  float cached[VEC * CACHE + 1u];  // sized by the specialization constants (+1: CACHE = 0)

  float sum = 0.0;
  uint chunk = 0u;
  for (uint base = lid * VEC; base < E; base += stride, ++chunk)
    for (uint j = 0u; j < VEC; ++j) {
      const uint i = base + j;
      if (i >= E) break;
      const float v = float(x[sd_index(p.layout_, n, c0 + i / p.HW, i % p.HW, p.C, p.HW)]) - K;
      if (chunk < CACHE) cached[chunk * VEC + j] = v;
      sum += v;
    }
  const float shift = reduceSum(sum) / float(E);

  float sq = 0.0;
  chunk = 0u;
  for (uint base = lid * VEC; base < E; base += stride, ++chunk)
    for (uint j = 0u; j < VEC; ++j) {
      const uint i = base + j;
      if (i >= E) break;
      const float v = chunk < CACHE ? cached[chunk * VEC + j]
                                    : float(x[sd_index(p.layout_, n, c0 + i / p.HW, i % p.HW, p.C, p.HW)]) - K;
      sq += (v - shift) * (v - shift);
    }
  const afp rstd = afp(inversesqrt(reduceSum(sq) / float(E) + p.eps));

  chunk = 0u;
  for (uint base = lid * VEC; base < E; base += stride, ++chunk)
    for (uint j = 0u; j < VEC; ++j) {
      const uint i = base + j;
      if (i >= E) break;
      const uint c = c0 + i / p.HW, hw = i % p.HW, at = sd_index(p.layout_, n, c, hw, p.C, p.HW);
      const float v = chunk < CACHE ? cached[chunk * VEC + j] : float(x[at]) - K;
      afp o = afp(v - shift) * rstd * afp(wgamma_p(c)) + afp(wbeta_p(c));
      if ((p.flags & 1u) != 0u) o = o / (afp(1.0) + exp(-o));  // -o > 11.1 in half: o / inf = -0, benign
      if ((p.flags & 2u) != 0u) o += afp(res[at]);
      y[at] = sfp(o);
    }

  if (g == p.G - 1u)
    for (uint c = p.C; c < sd_stored_channels(p.layout_, p.C); ++c)
      for (uint hw = lid; hw < p.HW; hw += gl_WorkGroupSize.x) y[sd_index(p.layout_, n, c, hw, p.C, p.HW)] = sfp(0.0);
}
