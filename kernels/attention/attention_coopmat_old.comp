#version 450
// DIAGNOSTIC ONLY (session 39): the two-pass shader of e03a80a, run with SDSPEED_VK_FLASH_DEBUG=OLD=1.
// FlashAttention on tensor cores through VK_NV_cooperative_matrix (issue #22), the
// flash_coopmat_f16 variant (kernels/attention/README.md):
//   out = softmax(Q K^T * scale + mask) V, per (batch, head), heads interleaved in the
//   channels as attention.comp reads them (NCHW or NC4HW4, a push constant).
// Q K^T and P V are products of f16 values (q pre-scaled by scale * log2 e, K, V and the
// weights P rounded to f16 once each, on their way into shared memory) accumulated in f32
// (the NV shape with A = B = f16, C = D = f32). The softmax statistics, the exponentials
// and the division by the row sums are f32.
//
// Two passes over the keys, so that O never needs rescaling. A per-row factor cannot be
// applied to an NV cooperative matrix (elements can be indexed, but which row an element
// is in is not defined), so one-pass flash attention has to take O out of the registers
// at every key block to rescale it; this shader's first version kept O in shared memory
// and read and wrote it per block, plus a softmax done by one invocation per row, and ran
// 4x slower than the scalar flash_f16 on an H100 (results/vulkan/tuned/). Here:
//   pass 1: S = Q K^T per block of BC keys (tensor cores), stored to shared memory, where
//     every invocation keeps the running max and sum of exp2 of one row's keys of one
//     slice (NSL slices of a row, keys c = slice mod NSL): online statistics, merged per
//     row at the end into the row's max M and sum L;
//   pass 2: S again, P = exp2(S - M) (f32, then f16: every weight <= 1), every element by
//     its own invocation, and O += P V with O's accumulators in registers for the whole
//     pass; finally out = O / L, one accumulator at a time through shared memory.
// Q K^T is computed twice (3 products per score instead of 2): at SD's head sizes the
// products cost less than the exponentials and the shared-memory traffic of S and P,
// which both passes pay anyway.
//
// A work-group owns BR = SG * CM query rows of one (batch, head) and DOC columns of O
// (DO = 0: the whole head, D rounded up to CN; a smaller DO splits the head's columns
// across work-groups, each recomputing Q K^T and the statistics: what keeps D = 512's O
// accumulators in registers). Subgroup sg owns rows sg * CM .. sg * CM + CM - 1 in both
// products. Q is staged once (BR x DQC, DQC = D rounded up to CK, zeros past D); K per
// block in chunks of KCH = min(DC, DQC) head dims; V per block (BC x DOC).
// Shared layouts (rows padded by 16 bytes: the coopmat loads' alignment, and a skew):
//   Qs[row * QSTR + d] (A of Q K^T, row-major), Ks[key * KSTR + d] (B, column-major),
//   Ss[row * SSTR + key] (f32, row-major; at the end each subgroup's CM x CN block of O,
//   column-major), Ps[row * PSTR + key] (A of P V, row-major), Vs[key * VSTR + col] (B of
//   P V, row-major).
// Needs: shaderFloat16, 32-invocation subgroups (the device rule: SG_ID picks the rows)
// and the NV shape CM x CN x CK, A = B = f16, C = D = f32, subgroup scope, in the
// device's list (kernels/attention/attention_coopmat.cpp).
//
// COOPMAT_EMULATE = 1 (module attention_coopmat_emu, tests only): the coopmat load,
// multiply-add and store in scalar code by the same layouts (kernels/common/coopmat.glsl:
// lane holding elements lane + 32 r, row e % CM, column e / CM), so lavapipe runs the
// tiling, staging, both passes, the statistics and the edges through the harness.
#include "../common/coopmat.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "../common/prelude.glsl"
// Every fixed-count loop: unrolled on tensor cores (the accumulator arrays must be indexed
// by constants, and a step's loads issued together), kept as loops in the emulation,
// whose unrolled scalar products made lavapipe's compiler take ~10 minutes for the
// test's pipelines.
#if COOPMAT_EMULATE
#define SD_UNROLL [[dont_unroll]]
#else
#define SD_UNROLL [[unroll]]
#endif

layout(local_size_x_id = 0) in;  // SG * 32
layout(constant_id = 1) const uint CM = 16;   // coopmat shape: query rows
layout(constant_id = 2) const uint CN = 16;   //                columns (keys in S, head dims in O)
layout(constant_id = 3) const uint CK = 16;   //                reduction (head dims in S, keys in O)
layout(constant_id = 4) const uint SG = 2;    // subgroups per work-group: BR = SG * CM rows
layout(constant_id = 5) const uint BC = 32;   // keys per block (a multiple of CN and CK)
layout(constant_id = 6) const uint DC = 64;   // head dims per K staging chunk (a multiple of CK)
layout(constant_id = 7) const uint DOC = 48;  // O columns per work-group (the host resolves DO = 0)
layout(constant_id = 8) const uint DQC = 48;  // the head's D rounded up to CK (the host's)

const uint BR = SG * CM, WGS = SG * 32u;
const uint NSL = WGS / BR;                    // invocations (key slices) per row in pass 1
const uint KCH = DC < DQC ? DC : DQC;         // head dims per K chunk
const uint QSTR = DQC + 8u, KSTR = KCH + 8u, SSTR = BC + 4u, PSTR = BC + 8u, VSTR = DOC + 8u;
const uint NS = BC / CN, NO = DOC / CN;       // S and O accumulators per subgroup
const uint CE = CM * CN / 32u;                // accumulator elements one lane holds (COOPMAT_EMULATE)
const uint XL = BC / NSL;                     // keys of a block one invocation takes in pass 1
// Elements each invocation stages or computes per step: Q (once), K chunk, V, P.
const uint QL = (BR * DQC + WGS - 1u) / WGS, KL = (BC * KCH + WGS - 1u) / WGS;
const uint VL = (BC * DOC + WGS - 1u) / WGS, PL = (BR * BC + WGS - 1u) / WGS;

layout(std430, binding = 0) readonly buffer Q { sfp q[]; };
layout(std430, binding = 1) readonly buffer K { sfp k[]; };
layout(std430, binding = 2) readonly buffer V { sfp v[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) writeonly buffer Out { sfp out_[]; };
layout(push_constant) uniform Push {
  uint H, BH, S, L, D4, layout_, flags;  // attention.comp's: flags 1 causal, 2 mask
  float scale;
} p;

const float NEG_INF = -1.0 / 0.0;
const float LOG2E = 1.4426950408889634;

shared float16_t Qs[BR * QSTR];
shared float16_t Ks[BC * KSTR];
shared float16_t Vs[BC * VSTR];
shared float16_t Ps[BR * PSTR];
shared float Ss[BR * SSTR];      // a block's S; at the end O, a CM x CN block per subgroup
shared float Ms[BR], Ls[BR];     // each row's max (the exponent's reference) and sum
shared float Pm[WGS], Pl[WGS];   // pass 1's per-slice max and sum, merged per row

uint at(uint b, uint h, uint d, uint t, uint T) { return sd_index(p.layout_, b, h * p.D4 * 4u + d, t, p.H * p.D4 * 4u, T); }

// Row `row`'s score of key k0 + c in log2 units (Ss holds Q K^T already scaled): the mask
// added, keys past L and (causal) past the row's token at -inf. Both passes read it alike.
float score(uint b, uint r0, uint k0, uint row, uint c) {
  const uint s = r0 + row, key = k0 + c;
  float x = Ss[row * SSTR + c];
  if ((p.flags & 2u) != 0u && s < p.S && key < p.L) x += mask[(b * p.S + s) * p.L + key] * LOG2E;
  if (key >= p.L || ((p.flags & 1u) != 0u && key > s)) x = NEG_INF;
  return x;
}

void main() {
  const uint lid = gl_LocalInvocationID.x, sg = SG_ID, lane = SG_LANE;
  const uint r0 = gl_WorkGroupID.x * BR, n0 = gl_WorkGroupID.y * DOC, bh = gl_WorkGroupID.z;
  const uint b = bh / p.H, h = bh % p.H, D = p.D4 * 4u;
  const float qscale = p.scale * LOG2E;  // scores in log2 units: exp2 below
  // Under a causal mask no row of this group attends past its last row.
  const uint kend = (p.flags & 1u) != 0u ? min(p.L, r0 + BR) : p.L;

  // Q once (neighbouring invocations: neighbouring tokens), scaled, zeros past D and S.
  {
    float qv[QL];
    SD_UNROLL for (uint i = 0u; i < QL; ++i) {
      const uint e = lid + i * WGS, row = e % BR, d = e / BR, s = r0 + row;
      const bool ok = all(bvec3(e < BR * DQC, d < D, s < p.S));
      const float val = float(q[at(b, h, SD_GUARD(ok, d), SD_GUARD(ok, s), p.S)]) * qscale;
      qv[i] = ok ? val : 0.0;
    }
    SD_UNROLL for (uint i = 0u; i < QL; ++i) {
      const uint e = lid + i * WGS;
      if (e < BR * DQC) Qs[(e % BR) * QSTR + e / BR] = float16_t(qv[i]);
    }
  }

#if COOPMAT_EMULATE
  float oacc[NO][CE];
  SD_UNROLL for (uint j = 0u; j < NO; ++j)
    SD_UNROLL for (uint r = 0u; r < CE; ++r) oacc[j][r] = 0.0;
#else
  fcoopmatNV<32, gl_ScopeSubgroup, CM, CN> oacc[NO];
  SD_UNROLL for (uint j = 0u; j < NO; ++j) oacc[j] = fcoopmatNV<32, gl_ScopeSubgroup, CM, CN>(0.0);
#endif
  // Pass 1's running statistics of (row lid / NSL, slice lid % NSL).
  float m = NEG_INF, l = 0.0;
  const uint xrow = lid / NSL, xsl = lid % NSL;

  for (uint pass = 0u; pass < 2u; ++pass) {
    for (uint k0 = 0u; k0 < kend; k0 += BC) {
      // S = Q K^T (scaled, log2 units), K staged KCH head dims at a time.
#if COOPMAT_EMULATE
      float sacc[NS][CE];
      SD_UNROLL for (uint j = 0u; j < NS; ++j)
        SD_UNROLL for (uint r = 0u; r < CE; ++r) sacc[j][r] = 0.0;
#else
      fcoopmatNV<32, gl_ScopeSubgroup, CM, CN> sacc[NS];
      SD_UNROLL for (uint j = 0u; j < NS; ++j) sacc[j] = fcoopmatNV<32, gl_ScopeSubgroup, CM, CN>(0.0);
#endif
      for (uint d0 = 0u; d0 < DQC; d0 += KCH) {
        barrier();  // the previous chunk's (or block's) reads of Ks, Ss, Ps and Vs are done
        // Loads first, stores after, every load unconditional (SD_GUARD, prelude.glsl).
        float kv[KL];
        SD_UNROLL for (uint i = 0u; i < KL; ++i) {  // neighbouring invocations: neighbouring keys
          const uint e = lid + i * WGS, kk = e % BC, d = d0 + e / BC, key = k0 + kk;
          const bool ok = all(bvec3(e < BC * KCH, d < D, key < p.L));
          const float val = float(k[at(b, h, SD_GUARD(ok, d), SD_GUARD(ok, key), p.L)]);
          kv[i] = ok ? val : 0.0;
        }
        SD_UNROLL for (uint i = 0u; i < KL; ++i) {
          const uint e = lid + i * WGS;
          if (e < BC * KCH) Ks[(e % BC) * KSTR + e / BC] = float16_t(kv[i]);
        }
        barrier();
        SD_UNROLL for (uint kk = 0u; kk < KCH; kk += CK) {
          if (d0 + kk < DQC) {  // uniform: the last chunk may be partial
#if COOPMAT_EMULATE
            SD_UNROLL for (uint j = 0u; j < NS; ++j)
              SD_UNROLL for (uint r = 0u; r < CE; ++r) {
                const uint e = lane + r * 32u, row = e % CM, col = e / CM;
                float acc = 0.0;  // f16 x f16 products are exact in float
                SD_UNROLL for (uint c = 0u; c < CK; ++c)
                  acc += float(Qs[(sg * CM + row) * QSTR + d0 + kk + c]) * float(Ks[(j * CN + col) * KSTR + kk + c]);
                sacc[j][r] += acc;
              }
#else
            fcoopmatNV<16, gl_ScopeSubgroup, CM, CK> qa;
            coopMatLoadNV(qa, Qs, sg * CM * QSTR + d0 + kk, QSTR, false);
            SD_UNROLL for (uint j = 0u; j < NS; ++j) {
              fcoopmatNV<16, gl_ScopeSubgroup, CK, CN> kb;
              coopMatLoadNV(kb, Ks, j * CN * KSTR + kk, KSTR, true);
              sacc[j] = coopMatMulAddNV(qa, kb, sacc[j]);
            }
#endif
          }
        }
      }
      SD_UNROLL for (uint j = 0u; j < NS; ++j) {
#if COOPMAT_EMULATE
        SD_UNROLL for (uint r = 0u; r < CE; ++r) {
          const uint e = lane + r * 32u;
          Ss[(sg * CM + e % CM) * SSTR + j * CN + e / CM] = sacc[j][r];
        }
#else
        coopMatStoreNV(sacc[j], Ss, sg * CM * SSTR + j * CN, SSTR, false);
#endif
      }
      barrier();
      if (pass == 0u) {
        // Online statistics of this invocation's row and key slice (f32). A slice whose
        // keys so far are all masked keeps max -inf: exponentiate against 0 instead (all
        // its weights are 0 either way), never -inf - -inf.
        float x[XL];
        float bmax = NEG_INF;
        SD_UNROLL for (uint i = 0u; i < XL; ++i) {
          x[i] = score(b, r0, k0, xrow, xsl + i * NSL);
          bmax = max(bmax, x[i]);
        }
        const float mnew = max(m, bmax), mref = mnew == NEG_INF ? 0.0 : mnew;
        l *= exp2(m - mref);
        SD_UNROLL for (uint i = 0u; i < XL; ++i) l += exp2(x[i] - mref);
        m = mnew;
      } else {
        // P = exp2(S - M) in f16 (every weight <= 1), one element per invocation, and the
        // V tile (BC x DOC, key-major), loads first.
        float vv[VL];
        SD_UNROLL for (uint i = 0u; i < VL; ++i) {
          const uint e = lid + i * WGS, kk = e % BC, d = n0 + e / BC, key = k0 + kk;
          const bool ok = all(bvec3(e < BC * DOC, d < D, key < p.L));
          const float val = float(v[at(b, h, SD_GUARD(ok, d), SD_GUARD(ok, key), p.L)]);
          vv[i] = ok ? val : 0.0;
        }
        SD_UNROLL for (uint i = 0u; i < PL; ++i) {
          const uint e = lid + i * WGS, row = e / BC, c = e % BC;
          if (e < BR * BC) Ps[row * PSTR + c] = float16_t(exp2(score(b, r0, k0, row, c) - Ms[row]));
        }
        SD_UNROLL for (uint i = 0u; i < VL; ++i) {
          const uint e = lid + i * WGS;
          if (e < BC * DOC) Vs[(e % BC) * VSTR + e / BC] = float16_t(vv[i]);
        }
        barrier();
        // O += P V, the subgroup's rows: each P fragment loaded once for all of O's columns.
        SD_UNROLL for (uint kk = 0u; kk < BC; kk += CK) {
#if COOPMAT_EMULATE
          SD_UNROLL for (uint j = 0u; j < NO; ++j)
            SD_UNROLL for (uint r = 0u; r < CE; ++r) {
              const uint e = lane + r * 32u, row = sg * CM + e % CM, col = j * CN + e / CM;
              float acc = 0.0;
              SD_UNROLL for (uint c = 0u; c < CK; ++c)
                acc += float(Ps[row * PSTR + kk + c]) * float(Vs[(kk + c) * VSTR + col]);
              oacc[j][r] += acc;
            }
#else
          fcoopmatNV<16, gl_ScopeSubgroup, CM, CK> pa;
          coopMatLoadNV(pa, Ps, sg * CM * PSTR + kk, PSTR, false);
          SD_UNROLL for (uint j = 0u; j < NO; ++j) {
            fcoopmatNV<16, gl_ScopeSubgroup, CK, CN> vb;
            coopMatLoadNV(vb, Vs, kk * VSTR + j * CN, VSTR, false);
            oacc[j] = coopMatMulAddNV(pa, vb, oacc[j]);
          }
#endif
        }
      }
    }
    if (pass == 0u) {
      // Each row's max and sum from its slices' (f32).
      Pm[lid] = m;
      Pl[lid] = l;
      barrier();
      if (lid < BR) {
        float mx = NEG_INF;
        SD_UNROLL for (uint i = 0u; i < NSL; ++i) mx = max(mx, Pm[lid * NSL + i]);
        const float mref = mx == NEG_INF ? 0.0 : mx;
        float sum = 0.0;
        SD_UNROLL for (uint i = 0u; i < NSL; ++i) sum += Pl[lid * NSL + i] * exp2(Pm[lid * NSL + i] - mref);
        Ms[lid] = mref;
        Ls[lid] = sum;
      }
      // Pass 2's first barrier makes Ms and Ls visible before their first read.
    }
  }

  // out = O / L, one CM x CN accumulator at a time through the subgroup's block of Ss
  // (column-major: neighbouring lanes hold neighbouring tokens, coalesced under NCHW).
  const uint scratch = sg * CM * CN;
  SD_UNROLL for (uint j = 0u; j < NO; ++j) {
    barrier();  // Ss's previous reads (the last block's, or accumulator j - 1's) are done
#if COOPMAT_EMULATE
    SD_UNROLL for (uint r = 0u; r < CE; ++r) Ss[scratch + lane + r * 32u] = oacc[j][r];
#else
    coopMatStoreNV(oacc[j], Ss, scratch, CM, true);
#endif
    barrier();
    for (uint e = lane; e < CM * CN; e += 32u) {
      const uint row = e % CM, s = r0 + sg * CM + row, d = n0 + j * CN + e / CM;
      if (s < p.S && d < D) out_[at(b, h, d, s, p.S)] = sfp(Ss[scratch + e] / Ls[sg * CM + row]);
    }
  }
}
