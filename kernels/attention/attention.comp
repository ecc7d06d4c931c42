#version 450
// Multi-head attention on Vulkan, out = softmax(Q K^T * scale + mask) V (attention.cl is
// the OpenCL body; kernels/attention/README.md says what each variant moves).
// Q, K, V and out are token tensors [B, H*D, 1, S|L], heads interleaved in the channels,
// NCHW or NC4HW4 (a push constant), stored as sfp; head h is channels [h*D, (h+1)*D),
// read as D/4 vec4 slices (the family requires D % 4 == 0, so a slice never straddles an
// NC4HW4 group and the tensors have no padding lanes). mask is an f32 host input
// [B, 1, S, L] added to the scaled scores when flags & 2; causal (flags & 1) masks keys
// l > s (top-left aligned, as PyTorch). Everything is computed in float, except flash's
// products in the f16-arithmetic modules (flash_f16: attention_flash.glsl).
//
// One module, four stages chosen by the specialization constant STAGE (each stage's
// shared arrays are sized 1 in the others, so a pipeline holds only its own):
//   0 scores (naive, partially_fused_softmax): Q K^T * scale (+ mask) -> scores, an
//     R x R block per invocation of a TT x TT tile (TT = T * R), Q and K slices staged
//     through shared memory; work-group T*T, groups (ceil(L/TT), ceil(S/TT), B*H);
//   1 rows: per score row (max, 1/sum) in one online pass and a tree; naive (flags & 4)
//     rewrites the row as probabilities, partially fused stores the pair in stats;
//     work-group SWG, a group per row laid over x and y (65535 per dimension);
//   2 pv: probabilities (or exp(score - max), flags & 8) times V, R rows x R slices per
//     invocation, scaled by 1/sum at the end when flags & 8; groups (ceil(D4/TT),
//     ceil(S/TT), B*H);
//   3 flash: one dispatch. Each invocation owns RQ query rows (q pre-scaled by
//     scale * log2 e, and the output accumulator, HS vec4 each in registers); the
//     work-group streams K/V tiles of BK keys through shared memory and keeps a running
//     float max and sum per row (online softmax), rescaling once per chunk of KC keys;
//     the S x L matrix never exists. Work-group WG, groups (ceil(S / (WG*RQ)), B*H);
//   4 flash for D > 160 (attention_flash_wide.glsl): a row's slices split across
//     PARTS invocations, so the VAE's D = 512 head runs flash too.
#include "../common/prelude.glsl"

layout(local_size_x_id = 0) in;  // T*T (scores, pv), SWG (rows), WG (flash)
layout(constant_id = 1) const uint STAGE = 3;
layout(constant_id = 2) const uint T = 16;
layout(constant_id = 3) const uint R = 2;
layout(constant_id = 4) const uint BK = 32;
layout(constant_id = 5) const uint RQ = 1;
layout(constant_id = 6) const uint KC = 16;
layout(constant_id = 7) const uint HS = 10;  // flash: D / 4, the register arrays' bound

layout(std430, binding = 0) readonly buffer Q { sfp q[]; };
layout(std430, binding = 1) readonly buffer K { sfp k[]; };
layout(std430, binding = 2) readonly buffer V { sfp v[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) writeonly buffer Out { sfp out_[]; };
layout(std430, binding = 5) buffer Scores { float scores[]; };  // scratch, B*H*S*L
layout(std430, binding = 6) buffer Stats { vec2 stats[]; };     // scratch, (max, 1/sum) per row
layout(push_constant) uniform Push {
  uint H, BH, S, L, D4, layout_, flags;  // flags: 1 causal, 2 mask, 4 normalize rows, 8 stats in pv
  float scale;
} p;

const float NEG_INF = -1.0 / 0.0;
const float LOG2E = 1.4426950408889634;

// vec4 slice `sl` (channels 4 sl .. 4 sl + 3) of token t of a tensor of H*D4 slices and
// HW tokens: its first element and the distance between its lanes.
uint base4(uint b, uint sl, uint t, uint HW) {
  const uint C4 = p.H * p.D4;
  return p.layout_ == SD_NCHW ? (b * C4 * 4u + sl * 4u) * HW + t : ((b * C4 + sl) * HW + t) * 4u;
}
uint stride4(uint HW) { return p.layout_ == SD_NCHW ? HW : 1u; }
#define LOAD4(BUF, b, sl, t, HW)                                                              \
  vec4(float(BUF[base4(b, sl, t, HW)]), float(BUF[base4(b, sl, t, HW) + stride4(HW)]),        \
       float(BUF[base4(b, sl, t, HW) + 2u * stride4(HW)]), float(BUF[base4(b, sl, t, HW) + 3u * stride4(HW)]))
vec4 loadQ(uint b, uint sl, uint s) { return LOAD4(q, b, sl, s, p.S); }
vec4 loadK(uint b, uint sl, uint l) { return LOAD4(k, b, sl, l, p.L); }
vec4 loadV(uint b, uint sl, uint l) { return LOAD4(v, b, sl, l, p.L); }
void storeOut(uint b, uint sl, uint s, vec4 x) {
  const uint i = base4(b, sl, s, p.S), st = stride4(p.S);
  out_[i] = sfp(x.x);
  out_[i + st] = sfp(x.y);
  out_[i + 2u * st] = sfp(x.z);
  out_[i + 3u * st] = sfp(x.w);
}
float loadMask(uint b, uint s, uint l) { return mask[(b * p.S + s) * p.L + l]; }
bool causal() { return (p.flags & 1u) != 0u; }
bool hasMask() { return (p.flags & 2u) != 0u; }

#include "attention_tiled.glsl"
#include "attention_flash.glsl"
#include "attention_flash_wide.glsl"

void main() {
  if (STAGE == 0u) scoresStage();
  else if (STAGE == 1u) rowsStage();
  else if (STAGE == 2u) pvStage();
  else if (STAGE == 3u) flashStage();
  else flashWideStage();
}
