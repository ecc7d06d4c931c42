#version 450
// The token-row families on Vulkan (kernels/common/token_row_family.h): each token
// (n, t) of a token tensor [N, C, 1, HW] is transformed along its C channels.
//   -D SOFTMAX=1:   y = softmax(scale * x), the row maximum subtracted before exp, so
//                   large logits cannot overflow (softmax.cl);
//   -D LAYERNORM=1: y = (x - mean) * rstd * gamma + beta, two passes (mean, then the
//                   squared deviations) over values shifted by the token's first one,
//                   as layernorm.cl does, so a mean of 1000 costs no accuracy.
// Variants as in OpenCL, one module for both (specialization constant COOPERATIVE):
//   per_item (0): an invocation per token, looping over the channels;
//   cooperative (1): a work-group per token, partial results combined in shared memory.
// Statistics (softmax's max and sum, layernorm's shifted sums) are float always; in the
// f16-arithmetic modules (the cooperative_f16 variants) the per-element output math is
// float16_t: softmax's exp(scale x - max) * (1 / sum), layernorm's normalized value
// * gamma + beta (the value x - mean formed in float, as half's spacing at a mean of 1000
// is 0.5). NC4HW4 padding lanes are written 0.
#include "../common/prelude.glsl"

layout(local_size_x_id = 0) in;  // WG, a power of two
layout(constant_id = 1) const uint COOPERATIVE = 0;

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
#if LAYERNORM
#include "../common/weights.glsl"
SD_WEIGHT_BUFFER(1, G, wgamma)  // f32, or f16 (weights.glsl's SD_PFMT)
SD_WEIGHT_BUFFER(2, Bt, wbeta)
layout(std430, binding = 3) writeonly buffer Y { sfp y[]; };
#else
layout(std430, binding = 1) writeonly buffer Y { sfp y[]; };
#endif
layout(push_constant) uniform Push {
  uint N, C, HW, layout_;
  float attr;  // softmax: scale; layernorm: eps
} p;

shared vec2 red[gl_WorkGroupSize.x];

float load(uint n, uint c, uint t) { return float(x[sd_index(p.layout_, n, c, t, p.C, p.HW)]); }
void store(uint n, uint c, uint t, float v) { y[sd_index(p.layout_, n, c, t, p.C, p.HW)] = sfp(v); }

// (max, sum of exp(v - max)) of two parts, as one (online softmax).
vec2 combine(vec2 a, vec2 b) {
  const float m = max(a.x, b.x);
  if (isinf(m) && m < 0.0) return vec2(m, 0.0);
  return vec2(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

// Sum (x component) or online-softmax pair of the work-group's values; every invocation
// gets the result. Tree over shared memory, WG a power of two.
vec2 reduceGroup(vec2 v, bool softmaxPair) {
  const uint lid = gl_LocalInvocationID.x;
  red[lid] = v;
  barrier();
  for (uint off = gl_WorkGroupSize.x / 2u; off > 0u; off >>= 1u) {
    if (lid < off) red[lid] = softmaxPair ? combine(red[lid], red[lid + off]) : red[lid] + red[lid + off];
    barrier();
  }
  const vec2 r = red[0];
  barrier();  // red is reused by the next reduction
  return r;
}

void main() {
  uint n, t, first, step;
  if (COOPERATIVE != 0u) {
    // Rows over x and y (65535 groups per dimension guaranteed); the last line's spare
    // groups leave as a whole, before any barrier.
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.N * p.HW) return;
    n = row / p.HW;
    t = row % p.HW;
    first = gl_LocalInvocationID.x;
    step = gl_WorkGroupSize.x;
  } else {
    t = gl_GlobalInvocationID.x;
    n = gl_GlobalInvocationID.y;
    if (t >= p.HW) return;
    first = 0u;
    step = 1u;
  }
  const uint stored = sd_stored_channels(p.layout_, p.C);
#if SOFTMAX
  vec2 acc = vec2(-1.0 / 0.0, 0.0);
  for (uint c = first; c < p.C; c += step) acc = combine(acc, vec2(p.attr * load(n, c, t), 1.0));
  if (COOPERATIVE != 0u) acc = reduceGroup(acc, true);
  const afp inv = afp(1.0 / acc.y);
  for (uint c = first; c < stored; c += step)
    store(n, c, t, c < p.C ? float(exp(afp(p.attr * load(n, c, t) - acc.x)) * inv) : 0.0);
#else
  // Shifted by K = the token's first value: x - K is exact for the values near K a large
  // mean brings (Sterbenz), so the statistics and the output keep their accuracy.
  const float K = load(n, 0u, t);
  float sum = 0.0;
  for (uint c = first; c < p.C; c += step) sum += load(n, c, t) - K;
  if (COOPERATIVE != 0u) sum = reduceGroup(vec2(sum, 0.0), false).x;
  const float shift = sum / float(p.C);  // mean - K
  float sq = 0.0;
  for (uint c = first; c < p.C; c += step) {
    const float d = (load(n, c, t) - K) - shift;
    sq += d * d;
  }
  if (COOPERATIVE != 0u) sq = reduceGroup(vec2(sq, 0.0), false).x;
  const afp rstd = afp(inversesqrt(sq / float(p.C) + p.attr));
  for (uint c = first; c < stored; c += step)
    store(n, c, t, c < p.C ? float(afp((load(n, c, t) - K) - shift) * rstd * afp(wgamma_p(c)) + afp(wbeta_p(c))) : 0.0);
#endif
}
