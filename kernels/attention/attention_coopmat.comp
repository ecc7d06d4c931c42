#version 450
// FlashAttention on tensor cores through VK_NV_cooperative_matrix (issue #22), the
// flash_coopmat_f16 variant (kernels/attention/README.md):
//   out = softmax(Q K^T * scale + mask) V, per (batch, head), heads interleaved in the
//   channels as attention.comp reads them (NCHW or NC4HW4: the push constant layout_, and
//   the specialization constant LAYOUT the staging is compiled for).
// Q K^T and P V are products of f16 values (q pre-scaled by scale * log2 e, K, V and the
// weights P rounded to f16 once each, on their way into shared memory) accumulated in f32
// (the NV shape with A = B = f16, C = D = f32). The softmax statistics, the exponentials
// and the division by the row sums are f32.
//
// One pass over the keys, with a lazily moved reference max (session 39). Flash attention
// rescales O's rows whenever a row's running max grows; a per-row factor cannot be applied
// to an NV cooperative matrix in registers (which row an element is in is not defined), so
// the first version kept O in shared memory (4x slower than the scalar flash_f16 on an
// H100) and the second made two passes (statistics, then P V: Q K^T computed twice; still
// 2.5x slower, results/vulkan/splitk-flash/). Here each row keeps a reference m, and its
// weights are P = exp2(S - m). m moves only when a key block's max exceeds it by more than
// RT (log2 units), so weights stay <= 2^RT (f16 holds them; the f32 sums too). m is set at
// a row's first block with weights (O is still zero then: nothing to rescale); after that,
// each move takes O out of its registers: stored to shared memory, its rows scaled by
// exp2(m_old - m_new), loaded back. With RT = 8 and scores as SD's that almost never
// happens; RT = 0 moves m at every new max, as textbook flash attention does. O and the
// sums share m, so out = O / L whatever m ends as.
//
// A work-group owns BR = SG * CM query rows of one (batch, head) and DOC columns of O
// (DO = 0: the whole head, D rounded up to CN; a smaller DO splits the head's columns
// across work-groups, each recomputing Q K^T: what keeps D = 512's O accumulators in
// registers). Subgroup sg owns rows sg * CM .. sg * CM + CM - 1 in both products, and its
// own lanes hold those rows' statistics: lane `lane` of subgroup sg takes row
// sg * CM + lane / NSL (NSL = 32 / CM lanes a row, each a slice of the block's keys:
// c = slice mod NSL). Per block of BC keys:
//   (work-group) K staged KCH = min(DC, DQC) head dims at a time into Ks, the block's V
//   tile into Vs with K's first chunk; S = Q K^T;
//   (subgroup) S into the subgroup's rows of Ss; each lane takes its slice's scores into
//   registers, their max into Pm; both lanes of a row merge the row's slices into the
//   reference m (a register, the same in both) and the row's factor (Al: 1 unless m moved
//   from a row with weights); P = exp2(S - m) in f16 into the subgroup's rows of Ps, the
//   slices' sums l = l * factor + sum P (f32); O rescaled if a row of the subgroup moved
//   (Rf[sg]); O += P V.
// Only the K and V tiles are shared across subgroups: two work-group barriers a K chunk
// (the tiles' previous readers done; the stored tiles visible), and everything from S to
// P V synchronizes the subgroup alone (SG_BARRIER), so one subgroup's softmax overlaps
// another's products. (Before, session 39 to 41: K and V shared one buffer and the
// statistics passed through work-group barriers, six a block; the 4096-token D = 40
// self-attention ran 42 TFLOP/s on an H100.) The staging runs one tile ahead through
// registers: the next block's V tile and first K chunk are loaded when this block's last
// K chunk is stored, a block's later K chunks when the one before is (stageK, stageV).
// Staging reads 4 head dims of one token per load (NC4HW4: one quad; NCHW: 4 loads a
// token apart), neighbouring invocations neighbouring tokens.
// Shared layouts (rows padded: the coopmat loads' 16-byte alignment, and a skew):
//   Qs[row * QSTR + d] (A of Q K^T, row-major), Ks[key * KSTR + d] (B, column-major),
//   Vs[key * VSTR + col] (B of P V, row-major), Ss[row * SSTR + key] (f32, row-major; a
//   subgroup's rows' block also carries O on its round trips and at the end, column-
//   major), Ps[row * PSTR + key] (A of P V, row-major).
// Needs: shaderFloat16, 32-invocation subgroups (the device rule: SG_ID picks the rows)
// and the NV shape CM x CN x CK, A = B = f16, C = D = f32, subgroup scope, in the
// device's list (kernels/attention/attention_coopmat.cpp).
//
// COOPMAT_EMULATE = 1 (module attention_coopmat_emu, tests only): the coopmat load,
// multiply-add and store in scalar code by the same layouts (kernels/common/coopmat.glsl:
// lane holding elements lane + 32 r, row e % CM, column e / CM), so lavapipe runs the
// tiling, staging, the statistics, the moves of m and the edges through the harness.
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
// Orders the subgroup's shared-memory accesses (its rows of Ss and Ps, Pm, Al, Rf):
// subgroupBarrier is an execution and memory barrier at subgroup scope. The emulation's
// "subgroups" are 32 invocations, not the device's (lavapipe's are narrower): there it is
// the work-group's barrier, reached in work-group-uniform control flow wherever it is used.
#if COOPMAT_EMULATE
#define SG_BARRIER() barrier()
#else
#define SG_BARRIER() subgroupBarrier()
#endif

layout(local_size_x_id = 0) in;  // SG * 32
layout(constant_id = 1) const uint CM = 16;   // coopmat shape: query rows
layout(constant_id = 2) const uint CN = 16;   //                columns (keys in S, head dims in O)
layout(constant_id = 3) const uint CK = 16;   //                reduction (head dims in S, keys in O)
layout(constant_id = 4) const uint SG = 4;    // subgroups per work-group: BR = SG * CM rows
layout(constant_id = 5) const uint BC = 32;   // keys per block (a multiple of CN and CK)
layout(constant_id = 6) const uint DC = 64;   // head dims per K staging chunk (a multiple of CK)
layout(constant_id = 7) const uint DOC = 48;  // O columns per work-group (the host resolves DO = 0)
layout(constant_id = 8) const uint DQC = 48;  // the head's D rounded up to CK (the host's)
layout(constant_id = 9) const uint RT = 8;    // how far (log2 units) a block's max may pass m before m moves
// The layout (SD_NCHW or SD_NC4HW4, the push constant layout_'s value) as a constant too:
// sd_index's select and the quad loads' branch are folded when the pipeline is made, so no
// branch stands between a staging load and its use (gemm_coopmat.comp's LAYOUT).
layout(constant_id = 10) const uint LAYOUT = 0;

const uint BR = SG * CM, WGS = SG * 32u;
const uint NSL = WGS / BR;                    // invocations (key slices) per row: 32 / CM
const uint KCH = DC < DQC ? DC : DQC;         // head dims per K chunk
const uint QSTR = DQC + 8u, KSTR = KCH + 8u, SSTR = BC + 4u, PSTR = BC + 8u, VSTR = DOC + 8u;
const uint NS = BC / CN, NO = DOC / CN;       // S and O accumulators per subgroup
const uint CE = CM * CN / 32u;                // accumulator elements one lane holds (COOPMAT_EMULATE)
const uint XL = BC / NSL;                     // keys of a block one invocation takes
// Quads (4 head dims of one token) each invocation stages: Q (once), a K chunk, V.
const uint QQ = BR * DQC / 4u, KQ = BC * KCH / 4u, VQ = BC * DOC / 4u;
const uint QL = (QQ + WGS - 1u) / WGS, KL = (KQ + WGS - 1u) / WGS, VL = (VQ + WGS - 1u) / WGS;

layout(std430, binding = 0) readonly buffer Q { sfp q[]; };
layout(std430, binding = 1) readonly buffer K { sfp k[]; };
layout(std430, binding = 2) readonly buffer V { sfp v[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };
layout(std430, binding = 4) writeonly buffer Out { sfp out_[]; };
// q, k and v again as NC4HW4 quads (4 channels of one token: D % 4 == 0, so a head's
// quads never straddle heads).
layout(std430, binding = 0) readonly buffer Q4 { sfp4 q4[]; };
layout(std430, binding = 1) readonly buffer K4 { sfp4 k4[]; };
layout(std430, binding = 2) readonly buffer V4 { sfp4 v4[]; };
layout(push_constant) uniform Push {
  uint H, BH, S, L, D4, layout_, flags;  // attention.comp's: flags 1 causal, 2 mask
  float scale;
} p;

const float NEG_INF = -1.0 / 0.0;
const float LOG2E = 1.4426950408889634;

shared float16_t Qs[BR * QSTR];
shared float16_t Ks[BC * KSTR];  // a block's K chunk
shared float16_t Vs[BC * VSTR];  // a block's V tile
shared float16_t Ps[BR * PSTR];
shared float Ss[BR * SSTR];      // a block's S; O's round trips and the output (per subgroup)
shared float Al[BR];             // each row's factor for O this block; at the end its sum L
shared float Pm[WGS];            // the slices' block max; at the end their sums
shared uint Rf[4];               // [sg]: a row of subgroup sg with earlier weights moved its m
// Every shared array is a whole number of 16-byte units (Rf[4], not one uint; SG <= 4):
// drivers place shared variables in an order of their own, and the coopmat loads and
// stores need 16-byte aligned addresses. With a lone 4-byte Rf every check failed on an
// H100 and an H200 while the scalar emulation passed on both (results/vulkan/flash1/README.md).

uint at(uint b, uint h, uint d, uint t, uint T) { return sd_index(LAYOUT, b, h * p.D4 * 4u + d, t, p.H * p.D4 * 4u, T); }

// Head dims d .. d + 3 of query t (batch b, head h) as floats; zeros where !ok (every load
// issued, at index 0 then: SD_GUARD, prelude.glsl). d % 4 == 0, so under NC4HW4 the first
// element opens a quad (its index / 4); under NCHW the four lie S apart.
vec4 qQuad(bool ok, uint b, uint h, uint d, uint t) {
  const uint i0 = at(b, h, d, t, p.S), g = SD_GUARD(ok, i0), T = p.S;  // a named index: a select, not a branch
  vec4 r;
  if (LAYOUT == SD_NC4HW4) r = vec4(q4[g / 4u]);
  else r = vec4(float(q[g]), float(q[g + T]), float(q[g + 2u * T]), float(q[g + 3u * T]));
  return ok ? r : vec4(0.0);
}

// Row `row`'s score of key k0 + c in log2 units (Ss holds Q K^T already scaled): the mask
// added, keys past L and (causal) past the row's token at -inf.
float score(uint b, uint r0, uint k0, uint row, uint c) {
  const uint s = r0 + row, key = k0 + c;
  float x = Ss[row * SSTR + c];
  if ((p.flags & 2u) != 0u && s < p.S && key < p.L) x += mask[(b * p.S + s) * p.L + key] * LOG2E;
  if (key >= p.L || ((p.flags & 1u) != 0u && key > s)) x = NEG_INF;
  return x;
}

// The staging registers: one K chunk (KL quads an invocation) and one V tile (VL), in f16
// (what shared memory holds), as loaded, and which of them are inside the problem (kin,
// vin); zeros replace the others when they are stored, so between a load and its store
// nothing uses the value (a select on it would wait for the load where it is issued).
f16vec4 stK[KL], stV[VL];
bool kin[KL], vin[VL];

// Head dims d .. d + 3 of token t of k or v (the staging's raw loads; index 0 where !ok).
#define SD_RAW(buf, buf4, ok, b, h, d, t)                                                    \
  const uint i0 = at(b, h, d, t, p.L), g = SD_GUARD(ok, i0);                                 \
  if (LAYOUT == SD_NC4HW4) return f16vec4(buf4[g / 4u]);                                    \
  return f16vec4(buf[g], buf[g + p.L], buf[g + 2u * p.L], buf[g + 3u * p.L]);
f16vec4 kRaw(bool ok, uint b, uint h, uint d, uint t) { SD_RAW(k, k4, ok, b, h, d, t) }
f16vec4 vRaw(bool ok, uint b, uint h, uint d, uint t) { SD_RAW(v, v4, ok, b, h, d, t) }

// K's head dims d0 .. d0 + KCH - 1 of keys k0 .. k0 + BC - 1 into stK; neighbouring
// invocations: neighbouring keys. After the last block it is called once more (the
// loop's look-ahead): keys past kend, past L (index 0) or, under a causal mask, real keys
// no row of this work-group attends; loaded, never stored.
void stageK(uint b, uint h, uint k0, uint d0) {
  const uint lid = gl_LocalInvocationID.x, D = p.D4 * 4u;
  SD_UNROLL for (uint i = 0u; i < KL; ++i) {
    const uint e = lid + i * WGS, kk = e % BC, d = d0 + 4u * (e / BC);
    const bool inside = all(bvec3(e < KQ, d < D, k0 + kk < p.L));
    stK[i] = kRaw(inside, b, h, d, k0 + kk);
    kin[i] = inside;
  }
}
void storeK() {
  const uint lid = gl_LocalInvocationID.x;
  SD_UNROLL for (uint i = 0u; i < KL; ++i) {
    const uint e = lid + i * WGS, kk = e % BC, dd = 4u * (e / BC);
    const f16vec4 q = kin[i] ? stK[i] : f16vec4(0.0);
    if (e < KQ) SD_UNROLL for (uint j = 0u; j < 4u; ++j) Ks[kk * KSTR + dd + j] = q[j];
  }
}
// V's columns n0 .. n0 + DOC - 1 of keys k0 .. into stV (the look-ahead past the last
// block as stageK's).
void stageV(uint b, uint h, uint k0, uint n0) {
  const uint lid = gl_LocalInvocationID.x, D = p.D4 * 4u;
  SD_UNROLL for (uint i = 0u; i < VL; ++i) {
    const uint e = lid + i * WGS, kk = e % BC, d = n0 + 4u * (e / BC);
    const bool inside = all(bvec3(e < VQ, d < D, k0 + kk < p.L));
    stV[i] = vRaw(inside, b, h, d, k0 + kk);
    vin[i] = inside;
  }
}
void storeV() {
  const uint lid = gl_LocalInvocationID.x;
  SD_UNROLL for (uint i = 0u; i < VL; ++i) {
    const uint e = lid + i * WGS, kk = e % BC, cc = 4u * (e / BC);
    const f16vec4 q = vin[i] ? stV[i] : f16vec4(0.0);
    if (e < VQ) SD_UNROLL for (uint j = 0u; j < 4u; ++j) Vs[kk * VSTR + cc + j] = q[j];
  }
}

void main() {
  const uint lid = gl_LocalInvocationID.x, sg = SG_ID, lane = SG_LANE;
  const uint r0 = gl_WorkGroupID.x * BR, n0 = gl_WorkGroupID.y * DOC, bh = gl_WorkGroupID.z;
  const uint b = bh / p.H, h = bh % p.H, D = p.D4 * 4u;
  const float qscale = p.scale * LOG2E;  // scores in log2 units: exp2 below
  // Under a causal mask no row of this group attends past its last row.
  const uint kend = (p.flags & 1u) != 0u ? min(p.L, r0 + BR) : p.L;

  // Q once, scaled, zeros past D and S (the K loop's first barriers order it).
  {
    vec4 qv[QL];
    SD_UNROLL for (uint i = 0u; i < QL; ++i) {
      const uint e = lid + i * WGS, row = e % BR, d = 4u * (e / BR);
      qv[i] = qQuad(all(bvec3(e < QQ, d < D, r0 + row < p.S)), b, h, d, r0 + row) * qscale;
    }
    SD_UNROLL for (uint i = 0u; i < QL; ++i) {
      const uint e = lid + i * WGS, row = e % BR, d = 4u * (e / BR);
      if (e < QQ) SD_UNROLL for (uint j = 0u; j < 4u; ++j) Qs[row * QSTR + d + j] = float16_t(qv[i][j]);
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
  // This lane's row (in the work-group's rows: a row of its subgroup's) and key slice, its
  // slot in Pm (the subgroup's 32 slots: nothing assumes which invocations a subgroup has),
  // the row's reference m (unset: -inf; both lanes of a row compute the same) and the
  // slice's running sum of weights against it.
  const uint xrow = sg * CM + lane / NSL, xsl = lane % NSL, slot = sg * 32u + lane;
  const uint blk = sg * CM * SSTR;  // the subgroup's rows of Ss
  float m = NEG_INF, l = 0.0;

  stageK(b, h, 0u, 0u);  // block 0's first chunk and V tile (nothing past kend is used)
  stageV(b, h, 0u, n0);
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
      barrier();  // every subgroup's reads of Ks (the previous chunk's) and Vs (the previous block's P V) are done
      storeK();
      if (d0 == 0u) storeV();  // this block's V tile, in registers since the previous block's last chunk
      // Uniform: the next chunk of this block's K; after its last chunk the next block's
      // first chunk and V tile.
      if (d0 + KCH < DQC) stageK(b, h, k0, d0 + KCH);
      else {
        stageK(b, h, k0 + BC, 0u);  // after the last block: keys past kend, loaded but never stored
        stageV(b, h, k0 + BC, n0);
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
    // The subgroup's rows from here to its P V: its rows of Ss and Ps, its slots of Pm,
    // its rows of Al and its Rf, behind subgroup barriers alone. (The previous block's
    // reads of them ended before this block's work-group barriers.)
    SD_UNROLL for (uint j = 0u; j < NS; ++j) {
#if COOPMAT_EMULATE
      SD_UNROLL for (uint r = 0u; r < CE; ++r) {
        const uint e = lane + r * 32u;
        Ss[blk + (e % CM) * SSTR + j * CN + e / CM] = sacc[j][r];
      }
#else
      coopMatStoreNV(sacc[j], Ss, blk + j * CN, SSTR, false);
#endif
    }
    if (lane == 0u) Rf[sg] = 0u;
    SG_BARRIER();
    // This lane's scores of the block (its row, its key slice) and their max.
    float x[XL];
    float bmax = NEG_INF;
    SD_UNROLL for (uint i = 0u; i < XL; ++i) {
      x[i] = score(b, r0, k0, xrow, xsl + i * NSL);
      bmax = max(bmax, x[i]);
    }
    Pm[slot] = bmax;
    SG_BARRIER();
    // Both lanes of a row: the block's max (its slices') against m. m moves to it past
    // m + RT, by the factor exp2(m_old - m_new); a row with no weights yet (m_old = -inf:
    // l and its O are 0) takes factor 1, so only rows with weights make O take its round
    // trip. A row whose keys so far are all masked keeps m = -inf (its weights are 0,
    // exponentiated against 0 below).
    float f = 1.0;
    {
      float bm = NEG_INF;
      SD_UNROLL for (uint i = 0u; i < NSL; ++i) bm = max(bm, Pm[slot - xsl + i]);
      if (bm > m + float(RT)) {
        if (m != NEG_INF) {
          f = exp2(m - bm);
          Rf[sg] = 1u;
        }
        m = bm;
      }
      if (xsl == 0u) Al[xrow] = f;
    }
    // P = exp2(S - m) in f16 (every weight <= 2^RT) and the slice's sum.
    {
      const float mref = m == NEG_INF ? 0.0 : m;
      float sum = 0.0;
      SD_UNROLL for (uint i = 0u; i < XL; ++i) {
        const float w = exp2(x[i] - mref);
        Ps[xrow * PSTR + xsl + i * NSL] = float16_t(w);
        sum += w;
      }
      l = l * f + sum;
    }
    SG_BARRIER();  // Al, Rf and Ps written
    // O's rows scaled by their factors where a row of the subgroup moved its m (uniform in
    // the subgroup: Rf[sg] is read after the barrier that ordered its writes).
    if (Rf[sg] != 0u) {
#if COOPMAT_EMULATE
      SD_UNROLL for (uint j = 0u; j < NO; ++j)
        SD_UNROLL for (uint r = 0u; r < CE; ++r) oacc[j][r] *= Al[sg * CM + (lane + r * 32u) % CM];
#else
      // Through the subgroup's rows of Ss (their scores are in registers by now), column-
      // major, one accumulator at a time.
      SD_UNROLL for (uint j = 0u; j < NO; ++j) {
        SG_BARRIER();
        coopMatStoreNV(oacc[j], Ss, blk, CM, true);
        SG_BARRIER();
        for (uint e = lane; e < CM * CN; e += 32u) Ss[blk + e] *= Al[sg * CM + e % CM];
        SG_BARRIER();
        coopMatLoadNV(oacc[j], Ss, blk, CM, true);
      }
#endif
    }
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

  // Each row's sum L from its slices' (all against the row's m), in Pm's slots (their
  // last reads, the last block's maxima, ended before the barrier after Ps), then in Al.
  Pm[slot] = l;
  SG_BARRIER();
  if (xsl == 0u) {
    float sum = 0.0;
    SD_UNROLL for (uint i = 0u; i < NSL; ++i) sum += Pm[slot + i];
    Al[xrow] = sum;
  }
  // out = O / L, one CM x CN accumulator at a time through the subgroup's rows of Ss
  // (column-major: neighbouring lanes hold neighbouring tokens, coalesced under NCHW).
  SD_UNROLL for (uint j = 0u; j < NO; ++j) {
    SG_BARRIER();  // Al written; Ss's previous reads (the last block's, or accumulator j - 1's) are done
#if COOPMAT_EMULATE
    SD_UNROLL for (uint r = 0u; r < CE; ++r) Ss[blk + lane + r * 32u] = oacc[j][r];
#else
    coopMatStoreNV(oacc[j], Ss, blk, CM, true);
#endif
    SG_BARRIER();
    for (uint e = lane; e < CM * CN; e += 32u) {
      const uint row = e % CM, s = r0 + sg * CM + row, d = n0 + j * CN + e / CM;
      if (s < p.S && d < D) out_[at(b, h, d, s, p.S)] = sfp(Ss[blk + e] / Al[sg * CM + row]);
    }
  }
}
