#version 450
// GEMM / Linear on tensor cores through VK_NV_cooperative_matrix (issue #22), the
// coopmat_f16 variant (kernels/gemm/README.md):
//   y[b, o, t] = epilogue(sum_k x[b, k, t] w[r, k] + bias[r]) (+ residual[b, o, t])
// As a matrix product per sample: C (positions t x channels o) = A (t x k) B (k x o),
// A[t][k] = x[b, k, t], B[k][o] = w[o, k]. Products of f16 values, accumulated in f32
// (the shape's C = D = f32), so K adds no f16 rounding: the only f16 roundings are x and
// w on their way into shared memory, once each.
//
// A work-group computes a BM x BN tile (BM = SGM * WM * CM positions, BN = SGN * WN * CN
// channels); each of its SGM x SGN subgroups a WM x WN block of CM x CN accumulators (the
// "warp tile"), twice that under GEGLU (hidden and gate rows). K advances KS at a time:
// every invocation reads its share of the x tile and the w tile from global memory in
// the op's storage type and weight format (weights.glsl dequantizes q8_0/q4_0), converts
// to f16 and writes it to shared memory, zeros past K, past the positions and past the
// channels (so partial tiles and K % KS != 0 need no other case). With DB = 1 the next
// step's tile is read into registers while this step multiplies, and written to the
// other of two shared buffers: one barrier per step instead of two.
// Shared layouts (f16; rows padded by 8 halves, 16 bytes, the alignment the coopmat
// loads need and a skew against bank conflicts):
//   As: KS rows of BM positions (k-major, positions contiguous as in NCHW): A is loaded
//       column-major, column k at As[k * ASTR + t];
//   Bs: PAIRS * BN rows of KS (channel-major, k contiguous as in w's rows): B is loaded
//       column-major, column o at Bs[o * BSTR + k].
// Vector staging (AVEC, BVEC: set by the lowering from the storage format and the
// problem, not tuned): per-element staging issued 16 scalar loads of x and 16 of w per
// invocation per 32-deep K step at the default tile, each with its own index arithmetic,
// for 8 coopmat products per subgroup (an H100's driver reported 200 registers; the
// 2x320x1x4096 GEMM at n = 320 ran at 26 TFLOP/s and 167 GB/s, results/vulkan/tuned/).
// Loaded instead, through aliases of bindings 0 and 1:
//   AVEC = 1 (NC4HW4): quads of 4 channels of one position (one 8-byte f16 or 16-byte f32
//     load; a slice's lanes past K are padding, zeroed again here), positions fastest;
//   AVEC = 2 (NCHW, HW % 4 == 0): quads of 4 positions of one channel;
//   BVEC = 1 (f16 weights, K % 8 == 0): 8 halves of a weight row (one 16-byte load), k fastest;
// a quad or chunk is whole or wholly outside, so one guard serves it. Bindings start at
// multiples of 16 bytes (VulkanBackend's arena alignment), so the quads are aligned.
// AVEC = BVEC = 0 is the per-element path below (every other layout, K, weight format).
// Epilogue: each subgroup stores one accumulator at a time (CM x CN f32, column-major:
// neighbouring lanes then hold neighbouring positions, coalesced stores in NCHW) to its
// own shared scratch, and its lanes apply bias, activation (GEGLU: hidden * gelu(gate)),
// residual and the store per element, skipping positions past HW and writing 0 to the
// NC4HW4 padding channels, as gemm_tiled.comp does.
// Needs: shaderFloat16 (f16 in shared memory and in the matrices), 32-invocation
// subgroups (the device rule in gemm_coopmat.cpp: gl_SubgroupID picks the warp tile, the
// work-group is SGM * SGN * 32), and the NV shape CM x CN x CK with A = B = f16, C = D =
// f32 at subgroup scope, which the device rule looks up in the device's list.
//
// COOPMAT_EMULATE = 1 (module gemm_coopmat_emu, for tests only): the four coopmat
// operations (load A, load B, multiply-add, store C) done in scalar code by the same
// layouts, with 32 consecutive invocations as a "subgroup" and each lane holding
// accumulator elements lane + 32 r (row e % CM, column e / CM). lavapipe, which has no
// cooperative matrices, so runs everything else of this shader (tiling, staging, strides,
// padding, GEGLU pairing, edges, the epilogue) through the harness.
#include "../common/coopmat.glsl"  // the extensions, or the emulation's subgroups
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "../common/prelude.glsl"
#include "../common/act.glsl"
#include "../common/weights.glsl"

layout(local_size_x_id = 0) in;  // SGM * SGN * 32
layout(constant_id = 1) const uint CM = 16;   // coopmat shape: positions
layout(constant_id = 2) const uint CN = 16;   //                channels
layout(constant_id = 3) const uint CK = 16;   //                reduction
layout(constant_id = 4) const uint WM = 2;    // accumulators per subgroup along positions
layout(constant_id = 5) const uint WN = 2;    //                           along channels
layout(constant_id = 6) const uint SGM = 2;   // subgroups per work-group along positions
layout(constant_id = 7) const uint SGN = 2;   //                          along channels
layout(constant_id = 8) const uint KS = 32;   // K per shared-memory step (a multiple of CK)
layout(constant_id = 9) const uint DB = 1;    // double-buffered shared tiles
layout(constant_id = 10) const uint PAIRS = 1;  // 2 under GEGLU (hidden and gate rows)
layout(constant_id = 11) const uint SGSIZE = 32;  // the device's subgroup size (checked: 32)
layout(constant_id = 12) const uint AVEC = 0;  // x staging: 0 per element, 1 NC4HW4 quads, 2 NCHW quads
layout(constant_id = 13) const uint BVEC = 0;  // w staging: 0 per element, 1 f16 rows in 8-half chunks
// The layout (SD_NCHW or SD_NC4HW4) as a constant, not a push constant: sd_index's select
// is folded when the pipeline is made, not paid per staged element.
layout(constant_id = 14) const uint LAYOUT = 0;

const uint BM = SGM * WM * CM, BN = SGN * WN * CN, WGS = SGM * SGN * SGSIZE;
const uint ASTR = BM + 8u, BSTR = KS + 8u;      // padded row lengths (halves)
const uint AT = KS * ASTR, BT = PAIRS * BN * BSTR;  // one stage's shared elements
const uint AE = KS * BM, BE = PAIRS * BN * KS;      // one stage's loaded elements
const uint AL = (AE + WGS - 1u) / WGS, BL = (BE + WGS - 1u) / WGS;  // per invocation
const uint STAGES = DB == 1u ? 2u : 1u;
const uint CT = CM * CN;                          // one accumulator's elements
const uint CE = CT / 32u;                         // of which one lane holds (COOPMAT_EMULATE)
const uint AQ = AE / 4u, AQL = (AQ + WGS - 1u) / WGS;  // x quads (AVEC != 0; KS, BM multiples of 4)
const uint BO = BE / 8u, BOL = (BO + WGS - 1u) / WGS;  // w chunks (BVEC = 1; KS a multiple of 8)

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
SD_WEIGHT_BUFFER(1, W, w)         // in SD_WFMT (weights.glsl)
SD_WEIGHT_BUFFER(2, Bias, wbias)  // in SD_PFMT
layout(std430, binding = 0) readonly buffer XQ { sfp4 xq[]; };   // x again, as quads (AVEC != 0)
layout(std430, binding = 1) readonly buffer WO { uvec4 wo[]; };  // w again, as 8-half chunks (BVEC = 1)
layout(std430, binding = 3) readonly buffer R { sfp res[]; };
layout(std430, binding = 4) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint K, F, HW, epi, flags;  // flags: 1 bias, 2 residual
} p;

shared float16_t As[STAGES * AT];
shared float16_t Bs[STAGES * BT];
shared float Cs[SGM * SGN * PAIRS * CT];  // per subgroup: its hidden (and gate) accumulator

float16_t ar[AL];
float16_t br[BL];
sfp4 aq[AQL];   // AVEC != 0
uvec4 bo[BOL];  // BVEC = 1 (the arrays of the other paths are dead code once specialized)

// Step k0's tiles into registers, as f16: x[b, k0 + kk, m0 + mm] and w[row, k0 + kk],
// 0 past K, past the positions or past the channels.
void loadGlobal(uint b, uint m0, uint n0, uint k0) {
  const uint lid = gl_LocalInvocationID.x;
  if (AVEC == 1u) {
    const uint S = (p.K + 3u) / 4u, K = p.K;  // slices per sample; K named for SD_GUARD
    [[unroll]] for (uint i = 0u; i < AQL; ++i) {  // channels k .. k + 3 of position t
      const uint e = lid + i * WGS, kq = e / BM, mm = e % BM, k = k0 + 4u * kq, t = m0 + mm;
      const bool ok = all(bvec3(e < AQ, k < p.K, t < p.HW));
      const uint q = (b * S + k / 4u) * p.HW + t;
      const sfp4 v = xq[SD_GUARD(ok, q)];
      aq[i] = mix(sfp4(0), v, lessThan(uvec4(k) + uvec4(0u, 1u, 2u, 3u), uvec4(SD_GUARD(ok, K))));
    }
  } else if (AVEC == 2u) {
    [[unroll]] for (uint i = 0u; i < AQL; ++i) {  // positions t .. t + 3 of channel k
      const uint e = lid + i * WGS, kk = e / (BM / 4u), mq = e % (BM / 4u), k = k0 + kk, t = m0 + 4u * mq;
      const bool ok = all(bvec3(e < AQ, k < p.K, t < p.HW));  // HW % 4 == 0: whole quads
      const uint q = ((b * p.K + k) * p.HW + t) / 4u;
      const sfp4 v = xq[SD_GUARD(ok, q)];
      aq[i] = mix(sfp4(0), v, bvec4(ok));
    }
  } else {
    [[unroll]] for (uint i = 0u; i < AL; ++i) {
      // positions fastest: neighbouring invocations read neighbouring x elements (NCHW).
      const uint e = lid + i * WGS, kk = e / BM, mm = e % BM, k = k0 + kk, t = m0 + mm;
      const bool ok = all(bvec3(e < AE, k < p.K, t < p.HW));
      const float v = float(x[sd_index(LAYOUT, b, SD_GUARD(ok, k), SD_GUARD(ok, t), p.K, p.HW)]);
      ar[i] = float16_t(ok ? v : 0.0);
    }
  }
  if (BVEC == 1u) {
    [[unroll]] for (uint i = 0u; i < BOL; ++i) {  // k .. k + 7 of row nn, k fastest
      const uint e = lid + i * WGS, kq = e % (KS / 8u), nn = e / (KS / 8u), k = k0 + 8u * kq;
      const uint pair = nn / BN, o = n0 + nn % BN;
      const bool ok = all(bvec3(e < BO, k < p.K, o < p.F));  // K % 8 == 0: whole chunks
      const uint c = ((pair * p.F + o) * p.K + k) / 8u;
      const uvec4 v = wo[SD_GUARD(ok, c)];
      bo[i] = mix(uvec4(0u), v, bvec4(ok));
    }
  } else {
    [[unroll]] for (uint i = 0u; i < BL; ++i) {
      // k fastest: neighbouring invocations read a w row's consecutive elements.
      const uint e = lid + i * WGS, kk = e % KS, nn = e / KS, k = k0 + kk;
      const uint pair = nn / BN, o = n0 + nn % BN;
      const bool ok = all(bvec3(e < BE, k < p.K, o < p.F));
      const uint row = pair * p.F + o;  // a named value: SD_GUARD of an expression is a branch
      const float v = w_w(SD_GUARD(ok, row), SD_GUARD(ok, k), p.K);
      br[i] = float16_t(ok ? v : 0.0);
    }
  }
}

void storeShared(uint stage) {
  const uint lid = gl_LocalInvocationID.x;
  if (AVEC == 1u) {
    [[unroll]] for (uint i = 0u; i < AQL; ++i) {  // channels 4 kq .. 4 kq + 3 of position mm
      const uint e = lid + i * WGS, a = stage * AT + 4u * (e / BM) * ASTR + e % BM;
      if (e < AQ) [[unroll]] for (uint j = 0u; j < 4u; ++j) As[a + j * ASTR] = float16_t(aq[i][j]);
    }
  } else if (AVEC == 2u) {
    [[unroll]] for (uint i = 0u; i < AQL; ++i) {  // positions 4 mq .. 4 mq + 3 of channel kk
      const uint e = lid + i * WGS, a = stage * AT + (e / (BM / 4u)) * ASTR + 4u * (e % (BM / 4u));
      if (e < AQ) [[unroll]] for (uint j = 0u; j < 4u; ++j) As[a + j] = float16_t(aq[i][j]);
    }
  } else {
    [[unroll]] for (uint i = 0u; i < AL; ++i) {
      const uint e = lid + i * WGS;
      if (e < AE) As[stage * AT + (e / BM) * ASTR + e % BM] = ar[i];
    }
  }
  if (BVEC == 1u) {
    [[unroll]] for (uint i = 0u; i < BOL; ++i) {  // k 8 kq .. 8 kq + 7 of row nn
      const uint e = lid + i * WGS, a = stage * BT + (e / (KS / 8u)) * BSTR + 8u * (e % (KS / 8u));
      if (e < BO) [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        const f16vec2 h = unpackFloat2x16(bo[i][c]);
        Bs[a + 2u * c] = h.x;
        Bs[a + 2u * c + 1u] = h.y;
      }
    }
  } else {
    [[unroll]] for (uint i = 0u; i < BL; ++i) {
      const uint e = lid + i * WGS;
      if (e < BE) Bs[stage * BT + (e / KS) * BSTR + e % KS] = br[i];
    }
  }
}

void main() {
  const uint sg = SG_ID, sgm = sg % SGM, sgn = sg / SGM;
  const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN, b = gl_WorkGroupID.z;
  // This subgroup's accumulator (q, i, j) covers positions (sgm * WM + i) * CM and
  // channels (sgn * WN + j) * CN of the tile, hidden rows (q = 0) or gate rows (q = 1).
#if COOPMAT_EMULATE
  float acc[PAIRS * WM * WN][CE];
  [[unroll]] for (uint a = 0u; a < PAIRS * WM * WN; ++a)
    [[unroll]] for (uint r = 0u; r < CE; ++r) acc[a][r] = 0.0;
#else
  fcoopmatNV<32, gl_ScopeSubgroup, CM, CN> acc[PAIRS * WM * WN];
  [[unroll]] for (uint a = 0u; a < PAIRS * WM * WN; ++a) acc[a] = fcoopmatNV<32, gl_ScopeSubgroup, CM, CN>(0.0);
#endif

  const uint steps = (p.K + KS - 1u) / KS;
  if (DB == 1u) {
    loadGlobal(b, m0, n0, 0u);
    storeShared(0u);
    barrier();
  }
  for (uint s = 0u; s < steps; ++s) {
    uint stage = 0u;
    if (DB == 1u) {
      stage = s & 1u;
      if (s + 1u < steps) loadGlobal(b, m0, n0, (s + 1u) * KS);  // in flight during the products
    } else {
      loadGlobal(b, m0, n0, s * KS);
      barrier();  // the previous step's coopmat loads of the tiles are done
      storeShared(0u);
      barrier();
    }
    [[unroll]] for (uint kk = 0u; kk < KS; kk += CK) {
      // A fragment i: rows (positions) (sgm * WM + i) * CM.., columns kk.. of the stage,
      // column-major (column c at As[.. + c * ASTR]); B fragment: rows kk.., columns
      // (channels) q * BN + (sgn * WN + j) * CN.., column-major (column c at Bs[.. + c * BSTR]).
#if COOPMAT_EMULATE
      uint am[WM];
      [[unroll]] for (uint i = 0u; i < WM; ++i) am[i] = stage * AT + kk * ASTR + (sgm * WM + i) * CM;
      [[unroll]] for (uint q = 0u; q < PAIRS; ++q)
        [[unroll]] for (uint j = 0u; j < WN; ++j) {
          const uint bm = stage * BT + (q * BN + (sgn * WN + j) * CN) * BSTR + kk;
          [[unroll]] for (uint i = 0u; i < WM; ++i) {
            const uint a = (q * WM + i) * WN + j;
            [[unroll]] for (uint r = 0u; r < CE; ++r) {
              const uint e = SG_LANE + r * 32u, row = e % CM, col = e / CM;
              float sum = 0.0;  // f16 x f16 products are exact in float
              [[unroll]] for (uint c = 0u; c < CK; ++c) sum += float(As[am[i] + c * ASTR + row]) * float(Bs[bm + col * BSTR + c]);
              acc[a][r] += sum;
            }
          }
        }
#else
      fcoopmatNV<16, gl_ScopeSubgroup, CM, CK> am[WM];
      [[unroll]] for (uint i = 0u; i < WM; ++i)
        coopMatLoadNV(am[i], As, stage * AT + kk * ASTR + (sgm * WM + i) * CM, ASTR, true);
      [[unroll]] for (uint q = 0u; q < PAIRS; ++q)
        [[unroll]] for (uint j = 0u; j < WN; ++j) {
          fcoopmatNV<16, gl_ScopeSubgroup, CK, CN> bm;
          coopMatLoadNV(bm, Bs, stage * BT + (q * BN + (sgn * WN + j) * CN) * BSTR + kk, BSTR, true);
          [[unroll]] for (uint i = 0u; i < WM; ++i) {
            const uint a = (q * WM + i) * WN + j;
            acc[a] = coopMatMulAddNV(am[i], bm, acc[a]);
          }
        }
#endif
    }
    if (DB == 1u) {
      // The other stage was last read in step s - 1, which every subgroup finished
      // before the barrier that ended it.
      if (s + 1u < steps) storeShared(stage ^ 1u);
      barrier();
    }
  }

  const bool hasBias = (p.flags & 1u) != 0u, hasRes = (p.flags & 2u) != 0u;
  const uint stored = sd_stored_channels(LAYOUT, p.F);
  const uint lane = SG_LANE, scratch = sg * PAIRS * CT;
  [[unroll]] for (uint i = 0u; i < WM; ++i)
    [[unroll]] for (uint j = 0u; j < WN; ++j) {
      [[unroll]] for (uint q = 0u; q < PAIRS; ++q) {
#if COOPMAT_EMULATE
        [[unroll]] for (uint r = 0u; r < CE; ++r) Cs[scratch + q * CT + lane + r * 32u] = acc[(q * WM + i) * WN + j][r];
#else
        coopMatStoreNV(acc[(q * WM + i) * WN + j], Cs, scratch + q * CT, CM, true);
#endif
      }
      barrier();  // the subgroup's stores are visible to its lanes (uniform: every subgroup runs WM x WN)
      const uint t0 = m0 + (sgm * WM + i) * CM, o0 = n0 + (sgn * WN + j) * CN;
      for (uint e = lane; e < CT; e += SGSIZE) {
        const uint t = t0 + e % CM, o = o0 + e / CM;  // column-major: e % CM is the position
        if (t >= p.HW || o >= stored) continue;
        float out_ = 0.0;
        if (o < p.F) {
          const float h = Cs[scratch + e] + (hasBias ? wbias_p(o) : 0.0);
          if (PAIRS == 2u) {
            const float g = Cs[scratch + CT + e] + (hasBias ? wbias_p(p.F + o) : 0.0);
            out_ = h * float(gelu(afp(g)));
          } else {
            out_ = p.epi == 0u ? h : float(apply(afp(h), p.epi - 1u));
          }
          if (hasRes) out_ += float(res[sd_index(LAYOUT, b, o, t, p.F, p.HW)]);
        }
        y[sd_index(LAYOUT, b, o, t, p.F, p.HW)] = sfp(out_);
      }
      barrier();  // read before the next accumulator overwrites the scratch
    }
}
