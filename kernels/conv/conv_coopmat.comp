#version 450
// 2-D convolution as an implicit GEMM on tensor cores through VK_NV_cooperative_matrix
// (issue #22), conv's coopmat_f16 variant (kernels/conv/README.md): per sample b
//   C (positions n x channels co) = A (n x k) B (k x co),
//   A[n][k] = x[b, ci, oy*S - P + ky, ox*S - P + kx] (im2col, gathered on the fly, never
//   written out), B[k][co] = w[co, k], k = ci * KK + ky * KSIZE + kx, n = oy * Wo + ox,
// then conv's epilogue (bias, time embedding, residual). 3x3 at any stride / pad conv
// takes, and 1x1 (KSIZE = 1: the gather is a plain read of x).
// The tiling, staging and coopmat operations are gemm_coopmat.comp's (its comment has the
// shared layouts, the double buffering and the emulation), with GEGLU's pairing left out;
// what differs is the A tile (gathered from x through the window, zeros in the padding)
// and the epilogue (conv.comp's storeY in its order: bias, temb, residual; NC4HW4's pad
// channels written 0; 4 channels of a position an invocation under NC4HW4). Products of f16 values (x and w rounded to f16 once, on their way
// into shared memory) accumulated in f32: no f16 rounding grows with K = Cin * KSIZE^2.
// Needs what gemm coopmat_f16 needs (shaderFloat16, 32-invocation subgroups, the NV shape
// CM x CN x CK, f16 x f16 + f32): the device rule in kernels/gemm/gemm_coopmat.cpp.
// COOPMAT_EMULATE = 1 (module conv_coopmat_emu, tests only): scalar code of the same
// layouts, as gemm_coopmat.comp's, so lavapipe runs the rest through the harness.
// Split-K (SK > 1, kernels/conv/README.md): the grid's z is SK * N, work-group z = ks * N + b
// reduces only the K steps [ks * per, (ks + 1) * per) (per = ceil(steps / SK), so each range
// is a whole number of KS steps, possibly empty) and stores its raw f32 accumulators to the
// partial sums at binding 6, part[ks][b][co][n] (CoutP = Cout rounded up to 4 rows of co per
// sample, whatever the layout: ConvFamily::scratch's size); no epilogue:
// conv_coopmat_reduce.comp sums the SK partials and applies it. SK = 1 is the single pass.
// Tap-major K (TAPS = 1: the lowering's choice where Cin % 8 == 0, every SD 1.5
// convolution but conv_in): k = tap * Cin + ci instead of ci * KK + tap, so an A chunk
// (8 consecutive k) is 8 channels of one input pixel: one window position and bounds check
// per chunk, and in NC4HW4 two 4-channel loads (8 bytes at f16) instead of 8 gathers that
// each split k into (ci, ky, kx). B then reads the weights in the same order, from f16 rows
// that conv_coopmat_weights.comp made from w (binding 7; resident derived weights, or per
// call), one 16-byte load per chunk. The GEMM and its f32 sums are the same; only the
// order of the K steps differs.
#include "../common/coopmat.glsl"  // the extensions, or the emulation's subgroups
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "../common/prelude.glsl"
#include "../common/weights.glsl"
#include "../common/coopmat_tiles.glsl"

layout(local_size_x_id = 0) in;  // SGM * SGN * 32
layout(constant_id = 1) const uint CM = 16;   // coopmat shape: positions
layout(constant_id = 2) const uint CN = 16;   //                output channels
layout(constant_id = 3) const uint CK = 16;   //                reduction
layout(constant_id = 4) const uint WM = 2;    // accumulators per subgroup along positions
layout(constant_id = 5) const uint WN = 2;    //                           along channels
layout(constant_id = 6) const uint SGM = 2;   // subgroups per work-group along positions
layout(constant_id = 7) const uint SGN = 2;   //                          along channels
layout(constant_id = 8) const uint KST = 32;  // K per shared-memory step (the point's KS; a multiple of CK)
layout(constant_id = 9) const uint DB = 1;    // double-buffered shared tiles
layout(constant_id = 10) const uint SGSIZE = 32;  // the device's subgroup size (checked: 32)
// The problem's kernel size, stride and padding (conv.comp says why constants): the
// gather splits k into (ci, ky, kx) by divisions by constants.
layout(constant_id = 11) const uint KSIZE = 3;
layout(constant_id = 12) const uint STRIDE = 1;
layout(constant_id = 13) const uint PAD = 1;
layout(constant_id = 14) const uint SK = 1;  // split-K: work-groups sharing an output tile (1: no split)
// w reads (set by the lowering, not tuned): 0 per element; 1 with f16 weights and
// K = Cin * KSIZE^2 a multiple of 8 (every SD 1.5 convolution but conv_in), a row's chunk
// of 8 halves in one 16-byte load, as gemm_coopmat.comp's BVEC. The gather of x stays per
// element (8 of them into a chunk): k = ci * KK + tap puts a pixel's neighbouring channels
// KK apart.
layout(constant_id = 15) const uint BVEC = 0;
// The layout (SD_NCHW or SD_NC4HW4) as a constant, not a push constant: sd_index's select
// is folded when the pipeline is made, not paid per gathered element.
layout(constant_id = 16) const uint LAYOUT = 0;
layout(constant_id = 17) const uint TAPS = 0;  // 1: tap-major K, B from binding 7 (needs Cin % 8 == 0)
const uint KK = KSIZE * KSIZE;

const uint BM = SGM * WM * CM, BN = SGN * WN * CN, WGS = SGM * SGN * SGSIZE;
const uint KC = KST / 8u, RS = KC + 1u;     // gemm_coopmat.comp's chunks and padded rows (uvec4s)
const uint AT = BM * RS, BT = BN * RS;       // one stage's shared uvec4s
const uint AC = BM * KC, BC = BN * KC;       // one stage's chunks
const uint ACL = (AC + WGS - 1u) / WGS, BCL = (BC + WGS - 1u) / WGS;  // per invocation
const uint STAGES = DB == 1u ? 2u : 1u;
const uint CT = CM * CN;   // one accumulator's elements
const uint CE = CT / 32u;  // of which one lane holds (COOPMAT_EMULATE)

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
SD_WEIGHT_BUFFER(1, Wt, w)        // [Cout][Cin * KSIZE^2] in SD_WFMT (weights.glsl)
SD_WEIGHT_BUFFER(2, Bias, wbias)  // in SD_PFMT
layout(std430, binding = 1) readonly buffer WO { uvec4 wo[]; };  // w again, as 8-half chunks (BVEC = 1)
layout(std430, binding = 0) readonly buffer XQ { sfp4 xq[]; };   // x again, as NC4HW4 quads (TAPS = 1)
layout(std430, binding = 7) readonly buffer WD { uvec4 wd[]; };  // tap-major f16 rows (TAPS = 1)
layout(std430, binding = 3) readonly buffer Temb { sfp temb[]; };
layout(std430, binding = 4) readonly buffer Res { sfp res[]; };
layout(std430, binding = 5) writeonly buffer Y { sfp y[]; };
// The residual and y again as NC4HW4 quads (the epilogue's 4 channels of a position).
layout(std430, binding = 4) readonly buffer ResQ { sfp4 resq[]; };
layout(std430, binding = 5) writeonly buffer YQ { sfp4 yq[]; };
// Split-K's partial sums (SK > 1; at SK = 1 the lowering binds y here, never written).
layout(std430, binding = 6) writeonly buffer Part { float part[]; };
layout(push_constant) uniform Push {
  uint Cin, H, W, Cout, Ho, Wo, flags;  // conv.comp's but the layout: flags 1 bias, 2 temb, 4 residual
} p;

// Sm: the staging tiles, then the epilogue's C tile (coopmat_ctile.glsl; no GEGLU pairs).
const uint PAIRS = 1u;
#include "../common/coopmat_ctile.glsl"

// This invocation's share of the next step, as loaded (gemm_coopmat.comp says why the
// masking and packing wait for storeShared): the gathered x elements and which are
// inside the image and K (bit j: element j), the w chunks and whether each is valid.
sfp ae[8u * ACL];
uint amask[ACL];
uvec4 bw[BCL];  // BVEC = 1 or TAPS = 1
bool bok[BCL];
uvec4 bc[BCL];  // BVEC = 0: dequantized and packed (weights.glsl's reads)
// The window origin (oy * S - P, ox * S - P) of each A chunk this invocation loads: its
// position is the same in every step (e % BM with e = lid + i * WGS), so the division by
// the pushed Wo is done once, not per step. Positions past Ho * Wo get an origin no
// window reaches (they read zeros, as conv_gemm.glsl's).
int iy0[ACL], ix0[ACL];

// Whether x[b, ci, iy, ix] is inside the image (else the padding's zero) and wanted (ok).
bool inImage(bool ok, int iy, int ix) {
  return all(bvec3(ok, all(greaterThanEqual(ivec2(iy, ix), ivec2(0))), all(lessThan(ivec2(iy, ix), ivec2(p.H, p.W)))));
}

// x[b, ci, iy, ix] where in_, else element 0 (masked when stored); branch-free (SD_GUARD
// in prelude.glsl: every load of the unrolled staging loop in flight at once).
sfp loadX(bool in_, uint b, uint ci, int iy, int ix) {
  const uint pix = uint(iy) * p.W + uint(ix);  // a named value: SD_GUARD of an expression is a branch
  const uint hw = SD_GUARD(in_, pix);
  return x[sd_index(LAYOUT, b, SD_GUARD(in_, ci), hw, p.Cin, p.H * p.W)];
}

// Step k0's chunks: the im2col values A[m0 + mm][k .. k + 7] and w[n0 + nn, k .. k + 7];
// past K (k0 >= K: the loop's last step), the positions (via the origins) or Cout,
// masked to 0 when stored.
void loadGlobal(uint b, uint n0, uint k0, uint K) {
  const uint lid = gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0u; i < ACL; ++i) {
    if (TAPS == 1u) {
      // Channels ci .. ci + 7 of input pixel (iy, ix) for tap (ky, kx); positions fastest
      // across invocations (neighbouring pixels' quads: coalesced in NC4HW4).
      const uint e = lid + i * WGS, k = k0 + 8u * (e / BM), tap = k / p.Cin, ci = k - tap * p.Cin;
      const uint ky = tap / KSIZE, kx = tap - ky * KSIZE;
      const int iy = iy0[i] + int(ky), ix = ix0[i] + int(kx);
      const bool in_ = inImage(all(bvec2(e < AC, k < K)), iy, ix);
      const uint HW = p.H * p.W, pix = uint(iy) * p.W + uint(ix), hw = SD_GUARD(in_, pix), c0 = SD_GUARD(in_, ci);
      if (LAYOUT == SD_NC4HW4) {
        const uint q = (b * ((p.Cin + 3u) / 4u) + c0 / 4u) * HW + hw;  // c0 % 4 == 0: whole quads
        const sfp4 lo = xq[q], hi = xq[q + HW];
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          ae[8u * i + j] = lo[j];
          ae[8u * i + 4u + j] = hi[j];
        }
      } else {
        [[unroll]] for (uint j = 0u; j < 8u; ++j) ae[8u * i + j] = x[(b * p.Cin + c0 + j) * HW + hw];
      }
      amask[i] = in_ ? 255u : 0u;
      continue;
    }
    // positions fastest: neighbouring invocations read neighbouring pixels of one tap.
    const uint e = lid + i * WGS, k = k0 + 8u * (e / BM);
    uint mask = 0u;
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      const uint kj = k + j, ci = kj / KK, t = kj - ci * KK, ky = t / KSIZE, kx = t - ky * KSIZE;
      const int iy = iy0[i] + int(ky), ix = ix0[i] + int(kx);
      const bool in_ = inImage(all(bvec2(e < AC, kj < K)), iy, ix);
      ae[8u * i + j] = loadX(in_, b, ci, iy, ix);
      const uint bit = 1u << j;  // named values: glslang branches on ?: of expressions
      mask |= in_ ? bit : 0u;
    }
    amask[i] = mask;
  }
  [[unroll]] for (uint i = 0u; i < BCL; ++i) {
    // k fastest: neighbouring invocations read a weight row's consecutive chunks.
    const uint e = lid + i * WGS, k = k0 + 8u * (e % KC), co = n0 + e / KC;
    const bool okc = all(bvec2(e < BC, co < p.Cout));
    if (TAPS == 1u) {  // the tap-major rows (K % 8 == 0)
      const bool ok = all(bvec2(okc, k < K));
      const uint c = (co * K + k) / 8u;
      bw[i] = wd[SD_GUARD(ok, c)];
      bok[i] = ok;
    } else if (BVEC == 1u) {  // K % 8 == 0: a chunk is whole or wholly past K
      const bool ok = all(bvec2(okc, k < K));
      const uint c = (co * K + k) / 8u;
      bw[i] = wo[SD_GUARD(ok, c)];
      bok[i] = ok;
    } else {
      f16vec4 h[2];
      [[unroll]] for (uint j = 0u; j < 8u; ++j) {
        const uint kj = k + j;
        const bool ok = all(bvec2(okc, kj < K));
        const float v = w_w(SD_GUARD(ok, co), SD_GUARD(ok, kj), K);
        h[j / 4u][j % 4u] = float16_t(ok ? v : 0.0);
      }
      bc[i] = sd_pack8(h[0], h[1]);
    }
  }
}

// The loaded chunks masked, converted to f16 and packed, one 16-byte store each: A chunk
// (mm, kc) at row mm, B chunk (nn, kc) at row nn.
void storeShared(uint stage) {
  const uint lid = gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0u; i < ACL; ++i) {
    f16vec4 h[2];
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      const float16_t v = float16_t(ae[8u * i + j]);
      const bool on = (amask[i] & (1u << j)) != 0u;
      h[j / 4u][j % 4u] = on ? v : float16_t(0.0);
    }
    const uint e = lid + i * WGS;
    if (e < AC) Sm[stage * AT + (e % BM) * RS + e / BM] = sd_pack8(h[0], h[1]);
  }
  [[unroll]] for (uint i = 0u; i < BCL; ++i) {
    uvec4 v = bc[i];
    if (BVEC == 1u || TAPS == 1u) v = mix(uvec4(0u), bw[i], bvec4(bok[i]));
    const uint e = lid + i * WGS;
    if (e < BC) Sm[BOFF + stage * BT + (e / KC) * RS + e % KC] = v;
  }
}

// One output before the residual: the sum v of channel co of sample b with the bias and
// the time embedding.
float finish(float v, uint b, uint co) {
  if ((p.flags & 1u) != 0u) v += wbias_p(co);
  if ((p.flags & 2u) != 0u) v += float(temb[sd_index(LAYOUT, b, co, 0u, p.Cout, 1u)]);
  return v;
}

void main() {
  const uint sg = SG_ID, sgm = sg % SGM, sgn = sg / SGM;
  // z = ks * N + b: N samples per K range (at SK = 1, z is the sample).
  const uint N = gl_NumWorkGroups.z / SK, b = gl_WorkGroupID.z % N, ks = gl_WorkGroupID.z / N;
  const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
  const uint HoWo = p.Ho * p.Wo, K = p.Cin * KK;
  [[unroll]] for (uint i = 0u; i < ACL; ++i) {
    const uint n = m0 + (gl_LocalInvocationID.x + i * WGS) % BM, oy = n / p.Wo, ox = n - oy * p.Wo;
    iy0[i] = n < HoWo ? int(oy * STRIDE) - int(PAD) : -int(KSIZE) - 1;
    ix0[i] = int(ox * STRIDE) - int(PAD);
  }
  // This subgroup's accumulator (i, j) covers positions (sgm * WM + i) * CM and channels
  // (sgn * WN + j) * CN of the tile.
#if COOPMAT_EMULATE
  float acc[WM * WN][CE];
  [[unroll]] for (uint a = 0u; a < WM * WN; ++a)
    [[unroll]] for (uint r = 0u; r < CE; ++r) acc[a][r] = 0.0;
#else
  fcoopmatNV<32, gl_ScopeSubgroup, CM, CN> acc[WM * WN];
  [[unroll]] for (uint a = 0u; a < WM * WN; ++a) acc[a] = fcoopmatNV<32, gl_ScopeSubgroup, CM, CN>(0.0);
#endif

  // This work-group's K steps [s0, s1): all of them at SK = 1; past the last step a range
  // is empty (its partials are zeros). Kc = per * KST, a multiple of KS.
  const uint steps = (K + KST - 1u) / KST, per = (steps + SK - 1u) / SK;
  const uint s0 = min(steps, ks * per), s1 = min(steps, s0 + per);
  if (DB == 1u) {
    loadGlobal(b, n0, s0 * KST, K);  // an empty range loads zeros (k >= K), never used
    storeShared(0u);
    barrier();
  }
  for (uint s = s0; s < s1; ++s) {
    uint stage = 0u;
    if (DB == 1u) {
      stage = (s - s0) & 1u;
      // Unconditionally (gemm_coopmat.comp says why): after the range's last step it
      // loads the next range's first step (or nothing past K), stored but never read.
      loadGlobal(b, n0, (s + 1u) * KST, K);  // in flight during the products
    } else {
      loadGlobal(b, n0, s * KST, K);
      barrier();  // the previous step's coopmat loads of the tiles are done
      storeShared(0u);
      barrier();
    }
    [[unroll]] for (uint kk = 0u; kk < KST; kk += CK) {
      // gemm_coopmat.comp's fragments: A rows (positions) (sgm * WM + i) * CM.., columns
      // kk.., row-major in As; B rows kk.., columns (sgn * WN + j) * CN.., column-major in Bs.
#if COOPMAT_EMULATE
      [[unroll]] for (uint j = 0u; j < WN; ++j) {
        const uint bm = BOFF + stage * BT + (sgn * WN + j) * CN * RS + kk / 8u;  // in uvec4s
        [[unroll]] for (uint i = 0u; i < WM; ++i) {
          const uint am = stage * AT + (sgm * WM + i) * CM * RS + kk / 8u, a = i * WN + j;
          [[unroll]] for (uint r = 0u; r < CE; ++r) {
            const uint e = SG_LANE + r * 32u, row = e % CM, col = e / CM;
            float sum = 0.0;
            [[unroll]] for (uint c = 0u; c < CK / 8u; ++c) sum += sd_dot8(Sm[am + row * RS + c], Sm[bm + col * RS + c]);
            acc[a][r] += sum;
          }
        }
      }
#else
      fcoopmatNV<16, gl_ScopeSubgroup, CM, CK> am[WM];
      [[unroll]] for (uint i = 0u; i < WM; ++i)
        coopMatLoadNV(am[i], Sm, stage * AT + (sgm * WM + i) * CM * RS + kk / 8u, RS, false);
      [[unroll]] for (uint j = 0u; j < WN; ++j) {
        fcoopmatNV<16, gl_ScopeSubgroup, CK, CN> bm;
        coopMatLoadNV(bm, Sm, BOFF + stage * BT + (sgn * WN + j) * CN * RS + kk / 8u, RS, true);
        [[unroll]] for (uint i = 0u; i < WM; ++i) acc[i * WN + j] = coopMatMulAddNV(am[i], bm, acc[i * WN + j]);
      }
#endif
    }
    if (DB == 1u) {
      // The other stage was last read in step s - 1, which every subgroup finished
      // before the barrier that ended it.
      storeShared(stage ^ 1u);
      barrier();
    }
  }

  // Epilogue in conv.cl's order (bias, temb, residual), as gemm_coopmat.comp's: every
  // accumulator into the C tile (column-major: positions contiguous), then 4 channels of a
  // position an invocation under NC4HW4 (vector residual load and store), one element under
  // NCHW; channels from Cout up to the stored ones (NC4HW4's pad lanes) written 0,
  // positions past Ho * Wo skipped. Split-K stores the raw sums instead, positions
  // contiguous: part[ks][b][co][n].
  const uint stored = sd_stored_channels(LAYOUT, p.Cout), coutP = (p.Cout + 3u) / 4u * 4u;
  const uint lid = gl_LocalInvocationID.x;
  [[unroll]] for (uint pi = 0u; pi < NPASS; ++pi) {
    barrier();  // the stages' (or the previous pass's) reads are done
    [[unroll]] for (uint i = 0u; i < WM; ++i)
      [[unroll]] for (uint jj = 0u; jj < EPJ; ++jj) {
        const uint a = i * WN + pi * EPJ + jj;
        const uint off = (sgn * EPJ + jj) * CN * LDC + (sgm * WM + i) * CM;  // floats, a multiple of 4
#if COOPMAT_EMULATE
        [[unroll]] for (uint r = 0u; r < CE; ++r) {
          const uint e = SG_LANE + r * 32u, f = off + (e / CM) * LDC + e % CM;
          Sm[f / 4u][f % 4u] = floatBitsToUint(acc[a][r]);
        }
#else
        coopMatStoreNV(acc[a], Sm, off / 4u, LDC / 4u, true);
#endif
      }
    barrier();
    if (LAYOUT == SD_NC4HW4 && SK == 1u) {
      for (uint e = lid; e < BM * (PBN / 4u); e += WGS) {
        const uint tl = e % BM, cl = 4u * (e / BM), n = m0 + tl, co = n0 + tileChannel(cl, pi);
        if (n >= HoWo || co >= stored) continue;  // stored % 4 == 0: a quad is whole or past it
        const bvec4 real = lessThan(uvec4(co) + uvec4(0u, 1u, 2u, 3u), uvec4(p.Cout));  // not padding
        vec4 v = vec4(0.0);
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          if (real[j]) v[j] = finish(ctile(0u, cl + j, tl), b, co + j);
        const uint qi = sd_index(LAYOUT, b, co, n, p.Cout, HoWo) / 4u;
        if ((p.flags & 4u) != 0u) v += mix(vec4(0.0), vec4(resq[qi]), real);
        yq[qi] = sfp4(v);
      }
    } else {
      for (uint e = lid; e < BM * PBN; e += WGS) {
        const uint tl = e % BM, cl = e / BM, n = m0 + tl, co = n0 + tileChannel(cl, pi);
        if (n >= HoWo || co >= stored) continue;
        if (SK > 1u) {  // the pad channels' sums are 0 (their w reads 0); the reduce writes them 0
          part[((ks * N + b) * coutP + co) * HoWo + n] = ctile(0u, cl, tl);
          continue;
        }
        float v = 0.0;
        if (co < p.Cout) {
          v = finish(ctile(0u, cl, tl), b, co);
          if ((p.flags & 4u) != 0u) v += float(res[sd_index(LAYOUT, b, co, n, p.Cout, HoWo)]);
        }
        y[sd_index(LAYOUT, b, co, n, p.Cout, HoWo)] = sfp(v);
      }
    }
  }
}
