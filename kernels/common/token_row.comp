#version 450
// The token-row families on Vulkan (kernels/common/token_row_family.h): each token
// (n, t) of a token tensor [N, C, 1, HW] is transformed along its C channels.
//   -D SOFTMAX=1:   y = softmax(scale * x), the row maximum subtracted before exp, so
//                   large logits cannot overflow (softmax.cl);
//   -D LAYERNORM=1: y = (x - mean) * rstd * gamma + beta, two passes (mean, then the
//                   squared deviations) over values shifted by the token's first one,
//                   as layernorm.cl does, so a mean of 1000 costs no accuracy.
// Variants as in OpenCL, one module for all three (specialization constant MODE):
//   per_item (0): an invocation per token, looping over the channels;
//   cooperative (1): a work-group per token, partial results combined in shared memory;
//   split (2): work-groups of TX tokens (x) by PARTS parts (y, local_size_y): each token's
//     slices of 4 channels dealt over its PARTS invocations, their partial results
//     combined in part order through shared memory (token_row_family.cpp says why).
//     Under NC4HW4 a slice is one vector load and store (the X4 / Y4 views).
// Statistics (softmax's max and sum, layernorm's shifted sums) are float always; in the
// f16-arithmetic modules (the cooperative_f16 variants) the per-element output math is
// float16_t: softmax's exp(scale x - max) * (1 / sum), layernorm's normalized value
// * gamma + beta (the value x - mean formed in float, as half's spacing at a mean of 1000
// is 0.5). NC4HW4 padding lanes are written 0.
#include "../common/prelude.glsl"

layout(local_size_x_id = 0, local_size_y_id = 2) in;  // WG (a power of two), or TX x PARTS
layout(constant_id = 1) const uint MODE = 0;  // 0 per_item, 1 cooperative, 2 split

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
layout(std430, binding = 0) readonly buffer X4 { sfp4 x4[]; };  // x again, as NC4HW4 slices
#if LAYERNORM
#include "../common/weights.glsl"
SD_WEIGHT_BUFFER(1, G, wgamma)  // f32, or f16 (weights.glsl's SD_PFMT)
SD_WEIGHT_BUFFER(2, Bt, wbeta)
#define YB 3
#else
#define YB 1
#endif
layout(std430, binding = YB) writeonly buffer Y { sfp y[]; };
layout(std430, binding = YB) writeonly buffer Y4 { sfp4 y4[]; };
layout(push_constant) uniform Push {
  uint N, C, HW, layout_;
  float attr;  // softmax: scale; layernorm: eps
} p;

shared vec2 red[gl_WorkGroupSize.x * gl_WorkGroupSize.y];

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

// The lanes of slice s that hold channels (< C).
bvec4 live4(uint s) { return sd_slice_lanes(s, 0u, p.C); }

// Slice s of token (n, t) in the NC4HW4 views X4 / Y4.
uint sliceIndex(uint n, uint s, uint t) { return (n * ((p.C + 3u) / 4u) + s) * p.HW + t; }

// Slice s (channels 4s .. 4s + 3) of token (n, t); lanes past C read as `pad`.
vec4 load4(uint n, uint s, uint t, float pad) {
  const uint c = 4u * s;
  vec4 v;
  if (p.layout_ == SD_NC4HW4) {
    v = vec4(x4[sliceIndex(n, s, t)]);
  } else {
    [[unroll]] for (uint j = 0u; j < 4u; ++j) v[j] = load(n, min(c + j, p.C - 1u), t);
  }
  return mix(vec4(pad), v, live4(s));
}

// Slice s of token (n, t) written; lanes past C: NC4HW4's padding (0), or nothing.
void store4(uint n, uint s, uint t, vec4 v) {
  const uint c = 4u * s;
  const bvec4 live = live4(s);
  if (p.layout_ == SD_NC4HW4) {
    y4[sliceIndex(n, s, t)] = sfp4(mix(vec4(0.0), v, live));
  } else {
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (live[j]) store(n, c + j, t, v[j]);
  }
}

// The PARTS partial results of this invocation's token combined in part order (the
// sum, or the online-softmax pair); every part gets the total.
vec2 combineParts(vec2 v, bool softmaxPair) {
  const uint tx = gl_LocalInvocationID.x, TX = gl_WorkGroupSize.x;
  red[gl_LocalInvocationID.y * TX + tx] = v;
  barrier();
  vec2 t = red[tx];
  for (uint k = 1u; k < gl_WorkGroupSize.y; ++k) t = softmaxPair ? combine(t, red[k * TX + tx]) : t + red[k * TX + tx];
  return t;
}

void splitMain() {
  const uint part = gl_LocalInvocationID.y, PARTS = gl_WorkGroupSize.y, n = gl_WorkGroupID.z;
  const uint hw = gl_GlobalInvocationID.x, t = min(hw, p.HW - 1u);  // spare lanes: the last token, no store
  const uint S = (p.C + 3u) / 4u;
#if SOFTMAX
  vec2 acc = vec2(-1.0 / 0.0, 0.0);
  for (uint s = part; s < S; s += PARTS) {
    const vec4 v = mix(vec4(-1.0 / 0.0), p.attr * load4(n, s, t, 0.0), live4(s));
    const float m = max(max(v.x, v.y), max(v.z, v.w));
    acc = combine(acc, vec2(m, dot(exp(v - m), vec4(1.0))));  // the statistics in float (above)
  }
  acc = combineParts(acc, true);
  if (hw >= p.HW) return;
  const afp inv = afp(1.0 / acc.y);
  for (uint s = part; s < S; s += PARTS) store4(n, s, hw, vec4(exp(afp4(p.attr * load4(n, s, hw, 0.0) - acc.x)) * inv));
#else
  // Shifted by K = the token's first value (see main), one pass: the sums of x - K and
  // (x - K)^2, as layernorm.cl's kernels.
  const float K = load(n, 0u, t);
  vec2 acc = vec2(0.0);
  for (uint s = part; s < S; s += PARTS) {
    const vec4 d = load4(n, s, t, K) - K;  // lanes past C: 0
    acc += vec2(dot(d, vec4(1.0)), dot(d, d));
  }
  acc = combineParts(acc, false);
  if (hw >= p.HW) return;
  const float shift = acc.x / float(p.C);  // mean - K
  const afp rstd = afp(inversesqrt(max(acc.y / float(p.C) - shift * shift, 0.0) + p.attr));
  for (uint s = part; s < S; s += PARTS) {
    const uint c = 4u * s;
    afp4 g, b;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      g[j] = afp(wgamma_p(min(c + j, p.C - 1u)));
      b[j] = afp(wbeta_p(min(c + j, p.C - 1u)));
    }
    store4(n, s, hw, vec4(afp4((load4(n, s, hw, K) - K) - shift) * rstd * g + b));
  }
#endif
}

void main() {
  if (MODE == 2u) {
    splitMain();
    return;
  }
  uint n, t, first, step;
  if (MODE == 1u) {
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
  if (MODE == 1u) acc = reduceGroup(acc, true);
  const afp inv = afp(1.0 / acc.y);
  for (uint c = first; c < stored; c += step)
    store(n, c, t, c < p.C ? float(exp(afp(p.attr * load(n, c, t) - acc.x)) * inv) : 0.0);
#else
  // Shifted by K = the token's first value: x - K is exact for the values near K a large
  // mean brings (Sterbenz), so the statistics and the output keep their accuracy.
  const float K = load(n, 0u, t);
  float sum = 0.0;
  for (uint c = first; c < p.C; c += step) sum += load(n, c, t) - K;
  if (MODE == 1u) sum = reduceGroup(vec2(sum, 0.0), false).x;
  const float shift = sum / float(p.C);  // mean - K
  float sq = 0.0;
  for (uint c = first; c < p.C; c += step) {
    const float d = (load(n, c, t) - K) - shift;
    sq += d * d;
  }
  if (MODE == 1u) sq = reduceGroup(vec2(sq, 0.0), false).x;
  const afp rstd = afp(inversesqrt(sq / float(p.C) + p.attr));
  for (uint c = first; c < stored; c += step)
    store(n, c, t, c < p.C ? float(afp((load(n, c, t) - K) - shift) * rstd * afp(wgamma_p(c)) + afp(wbeta_p(c))) : 0.0);
#endif
}
