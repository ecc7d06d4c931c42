#version 450
// FlashAttention on tensor cores through VK_NV_cooperative_matrix (issue #22), the
// flash_coopmat_f16 variant (kernels/attention/README.md):
//   out = softmax(Q K^T * scale + mask) V, per (batch, head), heads interleaved in the
//   channels as attention.comp reads them (NCHW or NC4HW4, a push constant).
// Q K^T and P V are products of f16 values (q pre-scaled by scale * log2 e, K, V and the
// weights P rounded to f16 once each, on their way into shared memory) accumulated in f32
// (the NV shape with A = B = f16, C = D = f32). The softmax statistics (running max and
// sum), the exponentials, the rescaling and the output accumulator O are f32.
//
// A work-group owns BR = SG * CM query rows of one (batch, head) and DO columns of O
// (DO = 0: the whole head, D rounded up to CN; a smaller DO splits the head's columns
// across work-groups, each recomputing Q K^T: what lets D = 512 fit 48 KiB). Subgroup sg
// owns rows sg * CM .. sg * CM + CM - 1 in both products. Per block of BC keys:
//   1. S = Q K^T: the head's D in steps of DC; each step stages the Q chunk (DC x BR,
//      d-major) and the K chunk (BC x DC, key-major) as f16, zeros past D, S and L; each
//      subgroup multiplies into BC / CN f32 accumulators (registers), then stores them to
//      Ss (f32, row-major).
//   2. Softmax, one invocation per row (invocation r < BR owns row r's max and sum in
//      registers for the whole kernel): mask, causal rule and L's end applied in f32, the
//      block's max, corr = exp2(m_old - m_new), sum = sum * corr + sum of the weights, the
//      weights written to Ps as f16 and corr to Cs. Meanwhile every invocation stages the
//      V tile (BC x DO, key-major, f16).
//   3. Rescale: Os (f32, BR x DO, shared memory for the whole kernel) row r *= Cs[r].
//   4. O += P V: per CN columns, the subgroup loads its CM x CN block of Os as an f32
//      accumulator, multiplies P (CM x BC) by V (BC x CN) in CK steps, stores it back.
// Why O lives in shared memory: a per-row factor cannot be applied to an NV cooperative
// matrix (element access exists, but which row an element is in is not defined), so the
// rescaling is done on Os by plain invocations, the MMA bracketed by a coopMatLoad and a
// coopMatStore of f32 (what the per-block store of the accumulator would cost anyway).
// Finally out = Os / sum per row.
// Shared layouts (rows padded by 16 bytes: the coopmat loads' alignment, and a skew):
//   Qs[d * QSTR + row] (A of Q K^T, column-major), Ks[key * KSTR + d] (B, column-major),
//   Ss[row * SSTR + key] (f32, row-major), Ps[row * PSTR + key] (A of P V, row-major),
//   Vs[key * VSTR + col] (B of P V, row-major), Os[row * OSTR + col] (f32, row-major).
// Needs: shaderFloat16, 32-invocation subgroups (the device rule: SG_ID picks the rows)
// and the NV shape CM x CN x CK, A = B = f16, C = D = f32, subgroup scope, in the
// device's list (kernels/attention/attention_coopmat.cpp). Not yet run on a device with
// cooperative matrices.
//
// COOPMAT_EMULATE = 1 (module attention_coopmat_emu, tests only): the coopmat load,
// multiply-add and store in scalar code by the same layouts (32 consecutive invocations as
// a "subgroup", lane holding elements lane + 32 r: row e % CM, column e / CM, as
// gemm_coopmat.comp's), so lavapipe runs the tiling, staging, softmax, rescaling and
// edges through the harness.
#if COOPMAT_EMULATE
#define SG_ID (gl_LocalInvocationIndex / 32u)
#define SG_LANE (gl_LocalInvocationIndex % 32u)
#else
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#define SG_ID gl_SubgroupID
#define SG_LANE gl_SubgroupInvocationID
#endif
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "../common/prelude.glsl"

layout(local_size_x_id = 0) in;  // SG * 32
layout(constant_id = 1) const uint CM = 16;   // coopmat shape: query rows
layout(constant_id = 2) const uint CN = 16;   //                columns (keys in S, head dims in O)
layout(constant_id = 3) const uint CK = 16;   //                reduction (head dims in S, keys in O)
layout(constant_id = 4) const uint SG = 2;    // subgroups per work-group: BR = SG * CM rows
layout(constant_id = 5) const uint BC = 32;   // keys per block (a multiple of CN and CK)
layout(constant_id = 6) const uint DC = 32;   // head dims per Q K^T staging step (a multiple of CK)
layout(constant_id = 7) const uint DOC = 48;  // O columns per work-group (the host resolves DO = 0)

const uint BR = SG * CM, WGS = SG * 32u;
const uint QSTR = BR + 8u, KSTR = DC + 8u, SSTR = BC + 4u, PSTR = BC + 8u, VSTR = DOC + 8u, OSTR = DOC + 4u;
const uint NS = BC / CN;          // S accumulators per subgroup
const uint CE = CM * CN / 32u;    // accumulator elements one lane holds (COOPMAT_EMULATE)
// Elements each invocation stages per step: of the Q and K tiles, of the V tile.
const uint QL = (BR * DC + WGS - 1u) / WGS, KL = (BC * DC + WGS - 1u) / WGS, VL = (BC * DOC + WGS - 1u) / WGS;

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

shared float16_t Qs[DC * QSTR];
shared float16_t Ks[BC * KSTR];
shared float16_t Vs[BC * VSTR];
shared float16_t Ps[BR * PSTR];
shared float Ss[BR * SSTR];
shared float Os[BR * OSTR];
shared float Cs[BR];  // the block's corr per row, then the final sum

uint at(uint b, uint h, uint d, uint t, uint T) { return sd_index(p.layout_, b, h * p.D4 * 4u + d, t, p.H * p.D4 * 4u, T); }

void main() {
  const uint lid = gl_LocalInvocationID.x, sg = SG_ID, lane = SG_LANE;
  const uint r0 = gl_WorkGroupID.x * BR, n0 = gl_WorkGroupID.y * DOC, bh = gl_WorkGroupID.z;
  const uint b = bh / p.H, h = bh % p.H, D = p.D4 * 4u;
  const bool causal = (p.flags & 1u) != 0u, hasMask = (p.flags & 2u) != 0u;
  const float qscale = p.scale * LOG2E;  // scores in log2 units: exp2 below
  for (uint e = lid; e < BR * OSTR; e += WGS) Os[e] = 0.0;
  float m = NEG_INF, sum = 0.0;  // row lid's (lid < BR)
  // Under a causal mask no row of this group attends past its last row.
  const uint kend = causal ? min(p.L, r0 + BR) : p.L;
  for (uint k0 = 0u; k0 < kend; k0 += BC) {
    // 1. S = Q K^T (scaled, log2 units).
#if COOPMAT_EMULATE
    float sacc[NS][CE];
    [[unroll]] for (uint j = 0u; j < NS; ++j)
      [[unroll]] for (uint r = 0u; r < CE; ++r) sacc[j][r] = 0.0;
#else
    fcoopmatNV<32, gl_ScopeSubgroup, CM, CN> sacc[NS];
    [[unroll]] for (uint j = 0u; j < NS; ++j) sacc[j] = fcoopmatNV<32, gl_ScopeSubgroup, CM, CN>(0.0);
#endif
    for (uint d0 = 0u; d0 < D; d0 += DC) {
      barrier();  // the previous step's (or block's) reads of Qs, Ks, Ps, Vs, Os are done
      // Loads first, stores after, every load unconditional (SD_GUARD, prelude.glsl): the
      // unrolled loops keep all of a step's loads in flight at once.
      float qv[QL], kv[KL];
      [[unroll]] for (uint i = 0u; i < QL; ++i) {  // neighbouring invocations: neighbouring tokens
        const uint e = lid + i * WGS, row = e % BR, dd = e / BR, d = d0 + dd, s = r0 + row;
        const bool ok = all(bvec3(e < BR * DC, d < D, s < p.S));
        const float v = float(q[at(b, h, SD_GUARD(ok, d), SD_GUARD(ok, s), p.S)]) * qscale;
        qv[i] = ok ? v : 0.0;
      }
      [[unroll]] for (uint i = 0u; i < KL; ++i) {
        const uint e = lid + i * WGS, kk = e % BC, dd = e / BC, d = d0 + dd, key = k0 + kk;
        const bool ok = all(bvec3(e < BC * DC, d < D, key < p.L));
        const float v = float(k[at(b, h, SD_GUARD(ok, d), SD_GUARD(ok, key), p.L)]);
        kv[i] = ok ? v : 0.0;
      }
      [[unroll]] for (uint i = 0u; i < QL; ++i) {
        const uint e = lid + i * WGS;
        if (e < BR * DC) Qs[(e / BR) * QSTR + e % BR] = float16_t(qv[i]);
      }
      [[unroll]] for (uint i = 0u; i < KL; ++i) {
        const uint e = lid + i * WGS;
        if (e < BC * DC) Ks[(e % BC) * KSTR + e / BC] = float16_t(kv[i]);
      }
      barrier();
      [[unroll]] for (uint kk = 0u; kk < DC; kk += CK) {
#if COOPMAT_EMULATE
        [[unroll]] for (uint j = 0u; j < NS; ++j)
          [[unroll]] for (uint r = 0u; r < CE; ++r) {
            const uint e = lane + r * 32u, row = e % CM, col = e / CM;
            float acc = 0.0;  // f16 x f16 products are exact in float
            [[unroll]] for (uint c = 0u; c < CK; ++c)
              acc += float(Qs[(kk + c) * QSTR + sg * CM + row]) * float(Ks[(j * CN + col) * KSTR + kk + c]);
            sacc[j][r] += acc;
          }
#else
        fcoopmatNV<16, gl_ScopeSubgroup, CM, CK> qa;
        coopMatLoadNV(qa, Qs, kk * QSTR + sg * CM, QSTR, true);
        [[unroll]] for (uint j = 0u; j < NS; ++j) {
          fcoopmatNV<16, gl_ScopeSubgroup, CK, CN> kb;
          coopMatLoadNV(kb, Ks, j * CN * KSTR + kk, KSTR, true);
          sacc[j] = coopMatMulAddNV(qa, kb, sacc[j]);
        }
#endif
      }
    }
    [[unroll]] for (uint j = 0u; j < NS; ++j) {
#if COOPMAT_EMULATE
      [[unroll]] for (uint r = 0u; r < CE; ++r) {
        const uint e = lane + r * 32u;
        Ss[(sg * CM + e % CM) * SSTR + j * CN + e / CM] = sacc[j][r];
      }
#else
      coopMatStoreNV(sacc[j], Ss, sg * CM * SSTR + j * CN, SSTR, false);
#endif
    }
    barrier();
    // 2. Online softmax of the block (f32), one invocation per row; all stage V.
    if (lid < BR) {
      const uint s = r0 + lid;
      float bmax = NEG_INF;
      [[unroll]] for (uint c = 0u; c < BC; ++c) {
        const uint key = k0 + c;
        float x = Ss[lid * SSTR + c];
        if (hasMask && s < p.S && key < p.L) x += mask[(b * p.S + s) * p.L + key] * LOG2E;
        if (key >= p.L || (causal && key > s)) x = NEG_INF;
        Ss[lid * SSTR + c] = x;
        bmax = max(bmax, x);
      }
      const float mnew = max(m, bmax);
      // A row with every key so far masked keeps max -inf: exponentiate against 0
      // instead (all its weights are 0 either way), never -inf - -inf.
      const float mref = mnew == NEG_INF ? 0.0 : mnew;
      const float corr = exp2(m - mref);
      m = mnew;
      sum *= corr;
      [[unroll]] for (uint c = 0u; c < BC; ++c) {
        const float w = exp2(Ss[lid * SSTR + c] - mref);
        sum += w;
        Ps[lid * PSTR + c] = float16_t(w);
      }
      Cs[lid] = corr;
    }
    float vv[VL];  // as Q and K above: loads first, unconditional
    [[unroll]] for (uint i = 0u; i < VL; ++i) {
      const uint e = lid + i * WGS, kk = e % BC, c = e / BC, d = n0 + c, key = k0 + kk;
      const bool ok = all(bvec3(e < BC * DOC, d < D, key < p.L));
      const float val = float(v[at(b, h, SD_GUARD(ok, d), SD_GUARD(ok, key), p.L)]);
      vv[i] = ok ? val : 0.0;
    }
    [[unroll]] for (uint i = 0u; i < VL; ++i) {
      const uint e = lid + i * WGS;
      if (e < BC * DOC) Vs[(e % BC) * VSTR + e / BC] = float16_t(vv[i]);
    }
    barrier();
    // 3. Rescale O's rows by the block's corr (f32).
    for (uint e = lid; e < BR * DOC; e += WGS) {
      const uint row = e / DOC, c = e % DOC;
      Os[row * OSTR + c] *= Cs[row];
    }
    barrier();
    // 4. O += P V, the subgroup's rows, CN columns at a time.
    [[unroll]] for (uint j = 0u; j < DOC / CN; ++j) {
#if COOPMAT_EMULATE
      [[unroll]] for (uint r = 0u; r < CE; ++r) {
        const uint e = lane + r * 32u, row = sg * CM + e % CM, col = j * CN + e / CM;
        float o = Os[row * OSTR + col];
        [[unroll]] for (uint kk = 0u; kk < BC; kk += CK) {
          float acc = 0.0;
          [[unroll]] for (uint c = 0u; c < CK; ++c) acc += float(Ps[row * PSTR + kk + c]) * float(Vs[(kk + c) * VSTR + col]);
          o += acc;
        }
        Os[row * OSTR + col] = o;
      }
#else
      fcoopmatNV<32, gl_ScopeSubgroup, CM, CN> oacc;
      coopMatLoadNV(oacc, Os, sg * CM * OSTR + j * CN, OSTR, false);
      [[unroll]] for (uint kk = 0u; kk < BC; kk += CK) {
        fcoopmatNV<16, gl_ScopeSubgroup, CM, CK> pa;
        fcoopmatNV<16, gl_ScopeSubgroup, CK, CN> vb;
        coopMatLoadNV(pa, Ps, sg * CM * PSTR + kk, PSTR, false);
        coopMatLoadNV(vb, Vs, kk * VSTR + j * CN, VSTR, false);
        oacc = coopMatMulAddNV(pa, vb, oacc);
      }
      coopMatStoreNV(oacc, Os, sg * CM * OSTR + j * CN, OSTR, false);
#endif
    }
  }
  barrier();
  if (lid < BR) Cs[lid] = sum;
  barrier();
  for (uint e = lid; e < BR * DOC; e += WGS) {
    const uint row = e % BR, c = e / BR, s = r0 + row, d = n0 + c;  // neighbouring tokens (NCHW)
    if (s < p.S && d < D) out_[at(b, h, d, s, p.S)] = sfp(Os[row * OSTR + c] / Cs[row]);
  }
}
