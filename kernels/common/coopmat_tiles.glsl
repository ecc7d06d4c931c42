// Shared by gemm_coopmat.comp and conv_coopmat.comp: their shared tiles hold f16 values
// as uvec4s, 8 halves each, rows k-contiguous (A: a position's K step, B: an output
// channel's), each row padded by one uvec4. NVIDIA's own coopmat benchmark
// (vk_cooperative_matrix_perf, shmem.comp) stages its tiles this way: one 16-byte shared
// store per 8 values instead of 8 two-byte stores, and the coopmat loads read 16-byte
// rows (glslang 12 takes uint / uvec2 / uvec4 arrays for an f16 coopMatLoadNV, element
// offset and stride in uvec4s, not f16vec4). The padding puts 8 consecutive rows (KS + 8
// halves apart: 48, 80 or 144 bytes for KS = 16, 32, 64) on 8 different 16-byte bank
// groups, so neither the staging's stores nor the 8-row phases of the coopmat loads conflict.

// 8 halves, lowest first, as one uvec4 (the layout a coopmat load reads).
uvec4 sd_pack8(f16vec4 lo, f16vec4 hi) {
  return uvec4(packFloat2x16(lo.xy), packFloat2x16(lo.zw), packFloat2x16(hi.xy), packFloat2x16(hi.zw));
}

// sum_j a_j b_j of two chunks of 8 halves, in float (COOPMAT_EMULATE's scalar products:
// f16 x f16 products are exact in float). One 16-byte shared read per 8 halves of each,
// as the tiles are laid out: lavapipe compiles and runs the emulation's unrolled loops
// several times faster than with a read per half.
// Half i (0..7) of a packed chunk, as float (the emulation's column-major A reads).
float sd_half(uvec4 v, uint i) { return float(unpackFloat2x16(v[i / 2u])[i % 2u]); }

float sd_dot8(uvec4 a, uvec4 b) {
  float s = 0.0;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) s += dot(vec2(unpackFloat2x16(a[j])), vec2(unpackFloat2x16(b[j])));
  return s;
}
