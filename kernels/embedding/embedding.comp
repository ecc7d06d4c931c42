#version 450
// CLIP's input embeddings on Vulkan (embedding.cl is the OpenCL body):
// y[b, c, 0, s] = tok[ids[b, s], c] + pos[s, c]. ids [B, 1, 1, S] holds token ids as
// floats (f32, exact up to 2^24); tok [V, C] and pos [P, C] are f32 or f16 tables (uint
// words, weights.glsl's SD_PFMT: f16 under f16, int8 and int4 weights); y is a token
// tensor [B, C, 1, S] in the run's storage. The host rejects ids outside [0, V) before the
// dispatch (embedding_vulkan.cpp), as on OpenCL. An invocation per (ITEMS tokens, stored
// channel, sample); NC4HW4 padding lanes written 0. One float add, as in OpenCL.
#include "../common/prelude.glsl"
#include "../common/weights.glsl"

layout(local_size_x_id = 0) in;  // WG
layout(constant_id = 1) const uint ITEMS = 1;

layout(std430, binding = 0) readonly buffer Ids { float ids[]; };
SD_WEIGHT_BUFFER(1, Tok, tok)
SD_WEIGHT_BUFFER(2, Pos, pos)
layout(std430, binding = 3) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint C, S, layout_;
} p;

void main() {
  const uint c = gl_GlobalInvocationID.y, n = gl_GlobalInvocationID.z;
  const uint first = gl_GlobalInvocationID.x * ITEMS;
  for (uint i = 0u; i < ITEMS; ++i) {
    const uint t = first + i;
    if (t >= p.S) return;
    float v = 0.0;
    if (c < p.C) {
      const uint id = uint(ids[n * p.S + t]);
      v = tok_p(id * p.C + c) + pos_p(t * p.C + c);
    }
    y[sd_index(p.layout_, n, c, t, p.C, p.S)] = sfp(v);
  }
}
