#version 450
// conv coopmat_f16's tap-major weight rows (TAPS = 1 in conv_coopmat.comp,
// kernels/conv/README.md): w [Cout][Cin][KSIZE][KSIZE] in the op's weight format (f32, f16,
// q8_0, q4_0: weights.glsl decodes them) rewritten as f16 rows of K = KSIZE^2 * Cin in the
// order k = tap * Cin + ci (tap = ky * KSIZE + kx), so that 8 consecutive k are 8
// consecutive input channels of one tap: one 16-byte load of a row for the GEMM's B chunk,
// matching the A chunk, which is then 8 channels of one input pixel (two NC4HW4 quads)
// instead of 8 gathers of separate (channel, tap) elements. Made once per weight tensor
// and kept (resident derived weights), or per call into a scratch region
// (conv_coopmat_vulkan.cpp). One invocation per 8-half chunk of a row: work-groups of WG
// chunks (x), one output channel (y). Needs Cin % 8 == 0 (the lowering's rule), so a chunk
// never straddles two taps and rows stay 16-byte aligned. Same bindings and push constants
// as conv_coopmat.comp, so one descriptor set serves all of the op's passes.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "../common/prelude.glsl"
#include "../common/weights.glsl"
#include "../common/coopmat_tiles.glsl"

layout(local_size_x_id = 0) in;               // WG chunks per work-group
layout(constant_id = 1) const uint KSIZE = 3;  // the problem's kernel size (conv_coopmat.comp's)

SD_WEIGHT_BUFFER(1, Wt, w)  // [Cout][Cin * KSIZE^2] in SD_WFMT
layout(std430, binding = 7) writeonly buffer WD { uvec4 wd[]; };  // [Cout][KSIZE^2 * Cin] f16, tap-major
layout(push_constant) uniform Push {
  uint Cin, H, W, Cout, Ho, Wo, flags;  // conv_coopmat.comp's
} p;

void main() {
  const uint KK = KSIZE * KSIZE, K = p.Cin * KK, chunks = K / 8u;
  const uint c = gl_GlobalInvocationID.x, co = gl_WorkGroupID.y;
  if (c >= chunks) return;  // the last work-group's tail
  const uint k = 8u * c, tap = k / p.Cin, ci = k - tap * p.Cin;
  f16vec4 h[2];
  [[unroll]] for (uint j = 0u; j < 8u; ++j) h[j / 4u][j % 4u] = float16_t(w_w(co, (ci + j) * KK + tap, K));
  wd[co * chunks + c] = sd_pack8(h[0], h[1]);
}
