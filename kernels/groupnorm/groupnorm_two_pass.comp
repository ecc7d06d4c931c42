#version 450
// GroupNorm (+SiLU, +residual) on Vulkan, the two_pass variant of groupnorm.cl (and its
// half twin two_pass_f16): two dispatches in one recording, the recorder's barrier between.
//   STAGE 0, statistics: SPLIT work-groups per (sample, group), grid (SPLIT, N * G); each
//     sums (x - K) and (x - K)^2 over its contiguous share of the group's Cpg * HW elements
//     (K = the group's first element: a shifted-data variance, accurate for any mean) and
//     writes the two float sums to partials[(ng * SPLIT + chunk) * 2 + {0, 1}].
//   STAGE 1, normalize: an invocation per stored output element, work-groups of WG
//     positions of one channel (grid: ceil(HW / WG), stored channels, N); invocation 0 adds
//     its group's SPLIT partials (fixed order: the result does not depend on scheduling)
//     into the mean and rstd, then every invocation writes
//       y = act((x - mean) * rstd * gamma_c + beta_c) + res,
//     NC4HW4's pad channels 0.
// Why: one_pass (groupnorm.comp) runs one work-group per (sample, group), 32 for the VAE's
// single image, each walking 1M elements at 512x512; on an H100 the six 1x128x512x512
// GroupNorms took 17.6 ms (results/vulkan/taps/README.md), against ~43 us each at the
// card's bandwidth. SPLIT spreads a group's statistics over SPLIT work-groups and the
// normalize pass over every element.
// QUADS = 1 (the lowering's choice for NC4HW4, since session 45): both stages read and
// write whole slices (4 channels of a position, one vector access; the X4 / R4 / Y4
// views), lanes outside the group masked: STAGE 0's chunks are ranges of positions
// walked for each slice the group touches (no division per element), and STAGE 1 has an
// invocation per (slice, position), grid (ceil(HW / NWG), slices, N), the slice's up to 4
// groups' statistics set up in shared memory by its first 4 invocations. Per element
// (QUADS = 0) a lane of NC4HW4 read 2 bytes 8 apart, and STAGE 0 divided by HW per element.
// Statistics in float always; in the f16-arithmetic modules (two_pass_f16) the
// per-element math after them is float16_t, x - mean formed in float first (as
// one_pass_f16). gamma and beta are uint words holding f32 or f16 (weights.glsl).
#include "../common/prelude.glsl"
#include "../common/weights.glsl"

layout(local_size_x_id = 0) in;  // STAGE 0: the family's WG (a power of two); STAGE 1: NWG
layout(constant_id = 1) const uint VEC = 4;    // STAGE 0: consecutive elements per invocation and chunk
layout(constant_id = 2) const uint SPLIT = 8;  // work-groups sharing one group's statistics
layout(constant_id = 3) const uint STAGE = 0;
layout(constant_id = 4) const uint QUADS = 0;  // 1: NC4HW4 slices (see above)

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
SD_WEIGHT_BUFFER(1, G, wgamma)
SD_WEIGHT_BUFFER(2, Bt, wbeta)
layout(std430, binding = 3) readonly buffer R { sfp res[]; };
layout(std430, binding = 4) writeonly buffer Y { sfp y[]; };
layout(std430, binding = 5) buffer Part { float part[]; };  // N * G * SPLIT * 2 floats (the op's scratch)
layout(std430, binding = 0) readonly buffer X4 { sfp4 x4[]; };  // x, res and y again, as NC4HW4 slices
layout(std430, binding = 3) readonly buffer R4 { sfp4 res4[]; };
layout(std430, binding = 4) writeonly buffer Y4 { sfp4 y4[]; };
layout(push_constant) uniform Push {
  uint C, HW, G, flags, layout_;  // flags: 1 = SiLU, 2 = residual
  float eps;
} p;

shared vec2 red[gl_WorkGroupSize.x];
shared float stat[2];  // STAGE 1: the group's mean of x - K, and rstd
shared vec3 quadStat[4];  // STAGE 1, QUADS: per lane of the slice, its group's K, mean of x - K, rstd

// STAGE 0: the work-group's sums of (x - K, (x - K)^2) added over its invocations (a tree)
// and written as partial `chunk` of (sample, group) ng.
void storePartial(vec2 acc, uint ng, uint chunk, uint lid) {
  red[lid] = acc;
  barrier();
  for (uint off = gl_WorkGroupSize.x / 2u; off > 0u; off >>= 1u) {
    if (lid < off) red[lid] += red[lid + off];
    barrier();
  }
  if (lid == 0u) {
    part[(ng * SPLIT + chunk) * 2u] = red[0].x;
    part[(ng * SPLIT + chunk) * 2u + 1u] = red[0].y;
  }
}

// STAGE 1: (sample, group) ng's mean of x - K and rstd, from its SPLIT partials added in
// chunk order (the result does not depend on scheduling).
vec2 groupStatistics(uint ng) {
  vec2 t = vec2(0.0);
  for (uint k = 0u; k < SPLIT; ++k) t += vec2(part[(ng * SPLIT + k) * 2u], part[(ng * SPLIT + k) * 2u + 1u]);
  const float count = float(p.C / p.G * p.HW), m = t.x / count;
  return vec2(m, inversesqrt(max(t.y / count - m * m, 0.0) + p.eps));
}

void statisticsQuads() {
  const uint chunk = gl_WorkGroupID.x, ng = gl_WorkGroupID.y, n = ng / p.G, g = ng % p.G;
  const uint cpg = p.C / p.G, c0 = g * cpg, lid = gl_LocalInvocationID.x, S = (p.C + 3u) / 4u;
  const float K = float(x[sd_index(p.layout_, n, c0, 0u, p.C, p.HW)]);
  const uint per = (p.HW + SPLIT - 1u) / SPLIT, first = chunk * per, end = min(p.HW, first + per);
  vec2 acc = vec2(0.0);
  for (uint sl = c0 / 4u; sl <= (c0 + cpg - 1u) / 4u; ++sl) {
    const bvec4 live = sd_slice_lanes(sl, c0, c0 + cpg);
    const uint row = (n * S + sl) * p.HW;
    for (uint base = first; base < end; base += gl_WorkGroupSize.x * VEC)
      [[unroll]] for (uint j = 0u; j < VEC; ++j) {
        const uint hw = base + j * gl_WorkGroupSize.x + lid;
        if (hw < end) {
          // A select, not a product: another group's inf or NaN stays out of this one's sums.
          const vec4 d = mix(vec4(0.0), vec4(x4[row + hw]) - K, live);
          acc += vec2(dot(d, vec4(1.0)), dot(d, d));
        }
      }
  }
  storePartial(acc, ng, chunk, lid);
}

void normalizeQuads() {
  const uint hw = gl_GlobalInvocationID.x, sl = gl_WorkGroupID.y, n = gl_WorkGroupID.z, lid = gl_LocalInvocationID.x;
  const uint cpg = p.C / p.G, S = (p.C + 3u) / 4u;
  if (lid < 4u) {  // lane lid's group: K, the mean of x - K and rstd from its SPLIT partials
    const uint c = min(4u * sl + lid, p.C - 1u), g = c / cpg;
    quadStat[lid] = vec3(float(x[sd_index(p.layout_, n, g * cpg, 0u, p.C, p.HW)]), groupStatistics(n * p.G + g));
  }
  barrier();
  if (hw >= p.HW) return;
  const uint at = (n * S + sl) * p.HW + hw;
  const vec4 v = vec4(x4[at]);
  afp4 o;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint c = min(4u * sl + j, p.C - 1u);
    const vec3 st = quadStat[j];
    o[j] = afp((v[j] - st.x) - st.y) * afp(st.z) * afp(wgamma_p(c)) + afp(wbeta_p(c));
  }
  if ((p.flags & 1u) != 0u) o = o / (afp(1.0) + exp(-o));
  if ((p.flags & 2u) != 0u) o += afp4(res4[at]);
  y4[at] = sfp4(mix(vec4(0.0), vec4(o), sd_slice_lanes(sl, 0u, p.C)));  // NC4HW4's pad channels 0
}

void statistics() {
  const uint chunk = gl_WorkGroupID.x, ng = gl_WorkGroupID.y, n = ng / p.G, g = ng % p.G;
  const uint cpg = p.C / p.G, E = cpg * p.HW, c0 = g * cpg, lid = gl_LocalInvocationID.x;
  const float K = float(x[sd_index(p.layout_, n, c0, 0u, p.C, p.HW)]);
  const uint per = (E + SPLIT - 1u) / SPLIT, first = chunk * per, end = min(E, first + per);
  vec2 s = vec2(0.0);
  for (uint base = first + lid * VEC; base < end; base += gl_WorkGroupSize.x * VEC)
    [[unroll]] for (uint j = 0u; j < VEC; ++j) {
      const uint i = base + j;
      if (i < end) {
        const float v = float(x[sd_index(p.layout_, n, c0 + i / p.HW, i % p.HW, p.C, p.HW)]) - K;
        s += vec2(v, v * v);
      }
    }
  storePartial(s, ng, chunk, lid);
}

void normalize() {
  const uint hw = gl_GlobalInvocationID.x, c = gl_WorkGroupID.y, n = gl_WorkGroupID.z;
  if (c >= p.C) {  // NC4HW4's pad channels (the whole work-group: c is its y)
    if (hw < p.HW) y[sd_index(p.layout_, n, c, hw, p.C, p.HW)] = sfp(0.0);
    return;
  }
  const uint cpg = p.C / p.G, g = c / cpg, ng = n * p.G + g;
  if (gl_LocalInvocationID.x == 0u) {
    const vec2 st = groupStatistics(ng);
    stat[0] = st.x;
    stat[1] = st.y;
  }
  barrier();
  if (hw >= p.HW) return;
  const float K = float(x[sd_index(p.layout_, n, g * cpg, 0u, p.C, p.HW)]);  // STAGE 0's shift
  const uint at = sd_index(p.layout_, n, c, hw, p.C, p.HW);
  // (x - K) - m, not x - (K + m): K + m would round the mean to the precision of x.
  afp o = afp((float(x[at]) - K) - stat[0]) * afp(stat[1]) * afp(wgamma_p(c)) + afp(wbeta_p(c));
  if ((p.flags & 1u) != 0u) o = o / (afp(1.0) + exp(-o));  // -o > 11.1 in half: o / inf = -0, benign
  if ((p.flags & 2u) != 0u) o += afp(res[at]);
  y[at] = sfp(o);
}

void main() {
  if (QUADS == 1u) {
    if (STAGE == 0u) statisticsQuads();
    else normalizeQuads();
  } else {
    if (STAGE == 0u) statistics();
    else normalize();
  }
}
