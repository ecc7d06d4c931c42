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
// Shared tiles (kernels/common/coopmat_tiles.glsl): f16 values packed 8 to a uvec4,
// every row k-contiguous and padded by one uvec4 (RS = KS / 8 + 1 uvec4s a row), in one
// shared array Sm (As from 0, Bs from BOFF; the epilogue's C tile over both after K):
//   As: BM rows, one per position: A is loaded row-major, row t at As[t * RS];
//   Bs: PAIRS * BN rows, one per channel (k contiguous as in w's rows): B is loaded
//       column-major, column o at Bs[o * RS].
// Each invocation stages whole chunks, 8 consecutive k of one row, into one uvec4 register
// and stores it with one 16-byte shared store. The tiles were f16 arrays before (A
// positions-contiguous), written a half at a time: 32 two-byte shared stores per
// invocation per 32-deep step at the default tile for 8 coopmat products per subgroup;
// an H100's driver reported 200 registers for it, and the 2x320x1x4096 GEMM at n = 320
// ran at 26 TFLOP/s and 167 GB/s (results/vulkan/tuned/).
// Global reads of a chunk (AVEC, BVEC: set by the lowering from the storage format and the
// problem, not tuned), through aliases of bindings 0 and 1:
//   AVEC = 1 (NC4HW4): two quads of 4 channels of one position (8-byte f16 or 16-byte f32
//     loads; a slice's lanes past K are padding, zeroed again here), positions fastest
//     across invocations;
//   AVEC = 0: 8 elements (sd_index: NCHW, or NC4HW4 with SDSPEED_VK_SCALAR_STAGING=1),
//     positions fastest (coalesced in NCHW);
//   BVEC = 1 (f16 weights, K % 8 == 0): one 16-byte load of a weight row, k fastest;
//   BVEC = 0: 8 elements through weights.glsl (every other weight format, K % 8 != 0).
// Split-K (SK > 1, as conv_coopmat.comp's): the grid's z is SK * N, work-group z = ks * N + b
// reduces only the K steps [ks * per, (ks + 1) * per) (per = ceil(steps / SK); a range past
// the last step is empty) and stores its raw f32 accumulators to part[ks][b][row][t] (row:
// the weight row, PAIRS * F of them: GEGLU's hidden and gate rows apart); then
// gemm_coopmat_reduce.comp sums the SK partials per output and applies the epilogue. For the
// problems whose tiles do not fill the GPU and whose K walk is long (SD 1.5's time-embedding
// GEMVs: one position, K = 1280; the 77-token context's K and V: K = 768): one work-group's
// serial K steps were their whole time, a memory latency each.
// Bindings start at multiples of 16 bytes (VulkanBackend's arena alignment), so the
// vector loads are aligned.
// Epilogue: every accumulator stored (f32, column-major: positions contiguous) into the
// work-group's C tile in shared memory, over the staging tiles; then the work-group's
// invocations apply bias, activation (GEGLU: hidden * gelu(gate)), residual and the store,
// 4 channels of a position each under NC4HW4 (one vector load and store), one element
// under NCHW, skipping positions past HW and writing 0 to the NC4HW4 padding channels, as
// gemm_tiled.comp does.
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
#include "../common/coopmat_tiles.glsl"

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
layout(constant_id = 12) const uint AVEC = 0;  // x chunks: 0 per element, 1 NC4HW4 quads
layout(constant_id = 13) const uint BVEC = 0;  // w chunks: 0 per element, 1 one 16-byte load (f16 rows)
// The layout (SD_NCHW or SD_NC4HW4) as a constant, not a push constant: sd_index's select
// is folded when the pipeline is made, not paid per staged element.
layout(constant_id = 14) const uint LAYOUT = 0;
layout(constant_id = 15) const uint SK = 1;  // split-K: work-groups sharing an output tile (1: no split)
// A staged column-major (set by the lowering, not tuned): 1 where x is f16 NCHW, its
// positions HW a multiple of 8 and K % 8 == 0 (Winograd's f16 V planes, conv
// winograd_f2x2_coopmat_f16): a chunk is 8 consecutive positions of one k, one 16-byte load
// and one 16-byte store, no conversion, instead of 8 element loads packed into a k chunk;
// the A stage is then KS rows (k) of BM positions, padded by a uvec4 (RA), read by the
// coopmat loads column-major. Measured (results/vulkan/session50/): Winograd's GEMM at K = 320
// spent its time staging, 47 TFLOP/s with the element loads.
layout(constant_id = 16) const uint ACOL = 0;

const uint BM = SGM * WM * CM, BN = SGN * WN * CN, WGS = SGM * SGN * SGSIZE;
const uint KC = KS / 8u, RS = KC + 1u;            // chunks of a row per step; padded row (uvec4s)
const uint PC = BM / 8u, RA = PC + 1u;            // ACOL: chunks of a k row; padded k row (uvec4s)
const uint AT = ACOL == 1u ? KS * RA : BM * RS, BT = PAIRS * BN * RS;  // one stage's shared uvec4s
const uint AC = BM * KC, BC = PAIRS * BN * KC;    // one stage's chunks
const uint ACL = (AC + WGS - 1u) / WGS, BCL = (BC + WGS - 1u) / WGS;  // per invocation
const uint STAGES = DB == 1u ? 2u : 1u;
const uint CT = CM * CN;                          // one accumulator's elements
const uint CE = CT / 32u;                         // of which one lane holds (COOPMAT_EMULATE)

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
SD_WEIGHT_BUFFER(1, W, w)         // in SD_WFMT (weights.glsl)
SD_WEIGHT_BUFFER(2, Bias, wbias)  // in SD_PFMT
layout(std430, binding = 0) readonly buffer XQ { sfp4 xq[]; };   // x again, as quads (AVEC = 1)
layout(std430, binding = 0) readonly buffer XV { uvec4 xv[]; };  // x again, as 8-half chunks (ACOL = 1)
layout(std430, binding = 1) readonly buffer WO { uvec4 wo[]; };  // w again, as 8-half chunks (BVEC = 1)
layout(std430, binding = 3) readonly buffer R { sfp res[]; };
layout(std430, binding = 4) writeonly buffer Y { sfp y[]; };
// The residual and y again as NC4HW4 quads (the epilogue's 4 channels of a position).
layout(std430, binding = 3) readonly buffer RQ { sfp4 resq[]; };
layout(std430, binding = 4) writeonly buffer YQ { sfp4 yq[]; };
// Split-K's partial sums (SK > 1; at SK = 1 the lowering binds y here, never written).
layout(std430, binding = 5) writeonly buffer Part { float part[]; };
layout(push_constant) uniform Push {
  uint K, F, HW, epi, flags;  // flags: 1 bias, 2 residual
  // Weight rows per sample: 0 for a Linear (every sample shares w); Winograd's coopmat GEMM
  // stage (kernels/conv/conv_winograd_vulkan.cpp) runs one GEMM per transform plane as a
  // "sample", each with its own U rows: sample b reads rows b * wrows + row.
  uint wrows;
} p;

// Sm: the staging tiles, then the epilogue's C tile (coopmat_ctile.glsl).
#include "../common/coopmat_ctile.glsl"

// This invocation's share of the next step, as loaded: each load's first use is in
// storeShared, after this step's products, so the loads are in flight during them. (Masked
// and packed right after loading, glslang's code used each value inside the branch that
// guarded the step's loads, and a step cost a memory latency on top of its products.)
sfp4 aq[2u * ACL];  // AVEC = 1: the chunks' two quads
uint an[2u * ACL];  //   and their valid lanes (0..4: past K or the positions, zeros)
sfp ae[8u * ACL];   // AVEC = 0: the chunks' elements
uint amask[ACL];    //   and their valid elements (bit j: element j)
uvec4 bw[BCL];      // BVEC = 1: the chunks as loaded
bool bok[BCL];      //   and whether each is valid
uvec4 bc[BCL];      // BVEC = 0: the chunks, dequantized and packed (weights.glsl's reads)
uvec4 aw[ACL];      // ACOL = 1: the chunks as loaded
bool aok[ACL];      //   and whether each is valid

// Step k0's chunks: x[b, k .. k + 7, t] of position t = m0 + mm and w[row, k .. k + 7] of
// channel row nn; past K (k0 >= K loads nothing but element 0: the loop's last step),
// past the positions or past the channels, masked to 0 when stored.
void loadGlobal(uint b, uint m0, uint n0, uint k0) {
  const uint lid = gl_LocalInvocationID.x, K = p.K;  // K named for SD_GUARD
  [[unroll]] for (uint i = 0u; i < ACL; ++i) {
    if (ACOL == 1u) {  // positions t .. t + 7 of row k: whole or wholly past HW (HW % 8 == 0)
      const uint e = lid + i * WGS, k = k0 + e / PC, t = m0 + 8u * (e % PC);
      const bool ok = all(bvec3(e < AC, k < K, t < p.HW));
      const uint c = ((b * K + k) * p.HW + t) / 8u;
      aw[i] = xv[SD_GUARD(ok, c)];
      aok[i] = ok;
      continue;
    }
    const uint e = lid + i * WGS, mm = e % BM, k = k0 + 8u * (e / BM), t = m0 + mm;
    const bool okc = all(bvec2(e < AC, t < p.HW));
    if (AVEC == 1u) {  // channels kq .. kq + 3 of position t, twice
      const uint S = (K + 3u) / 4u;
      [[unroll]] for (uint j = 0u; j < 2u; ++j) {
        const uint kq = k + 4u * j, q = (b * S + kq / 4u) * p.HW + t;
        const bool ok = all(bvec2(okc, kq < K));
        aq[2u * i + j] = xq[SD_GUARD(ok, q)];
        const uint lanes = min(4u, K - kq);  // named values: glslang branches on ?: of expressions
        an[2u * i + j] = ok ? lanes : 0u;
      }
    } else {
      uint mask = 0u;
      [[unroll]] for (uint j = 0u; j < 8u; ++j) {
        const uint kj = k + j;
        const bool ok = all(bvec2(okc, kj < K));
        ae[8u * i + j] = x[sd_index(LAYOUT, b, SD_GUARD(ok, kj), SD_GUARD(ok, t), K, p.HW)];
        const uint bit = 1u << j;
        mask |= ok ? bit : 0u;
      }
      amask[i] = mask;
    }
  }
  [[unroll]] for (uint i = 0u; i < BCL; ++i) {
    // k fastest: neighbouring invocations read a w row's consecutive chunks.
    const uint e = lid + i * WGS, nn = e / KC, k = k0 + 8u * (e % KC);
    const uint pair = nn / BN, o = n0 + nn % BN;
    const uint row = b * p.wrows + pair * p.F + o;  // a named value: SD_GUARD of an expression is a branch
    const bool okc = all(bvec2(e < BC, o < p.F));
    if (BVEC == 1u) {  // K % 8 == 0: a chunk is whole or wholly past K
      const bool ok = all(bvec2(okc, k < K));
      const uint c = (row * K + k) / 8u;
      bw[i] = wo[SD_GUARD(ok, c)];
      bok[i] = ok;
    } else {
      f16vec4 h[2];
      [[unroll]] for (uint j = 0u; j < 8u; ++j) {
        const uint kj = k + j;
        const bool ok = all(bvec2(okc, kj < K));
        const float v = w_w(SD_GUARD(ok, row), SD_GUARD(ok, kj), K);
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
    if (ACOL == 1u) {  // chunk (kk, pc) at k row kk
      const uint e = lid + i * WGS;
      if (e < AC) Sm[stage * AT + (e / PC) * RA + e % PC] = mix(uvec4(0u), aw[i], bvec4(aok[i]));
      continue;
    }
    f16vec4 h[2];
    if (AVEC == 1u) {
      [[unroll]] for (uint j = 0u; j < 2u; ++j)
        h[j] = f16vec4(mix(sfp4(0), aq[2u * i + j], lessThan(uvec4(0u, 1u, 2u, 3u), uvec4(an[2u * i + j]))));
    } else {
      [[unroll]] for (uint j = 0u; j < 8u; ++j) {
        const float16_t v = float16_t(ae[8u * i + j]);
        const bool on = (amask[i] & (1u << j)) != 0u;
        h[j / 4u][j % 4u] = on ? v : float16_t(0.0);
      }
    }
    const uint e = lid + i * WGS;
    if (e < AC) Sm[stage * AT + (e % BM) * RS + e / BM] = sd_pack8(h[0], h[1]);
  }
  [[unroll]] for (uint i = 0u; i < BCL; ++i) {
    uvec4 v = bc[i];
    if (BVEC == 1u) v = mix(uvec4(0u), bw[i], bvec4(bok[i]));
    const uint e = lid + i * WGS;
    if (e < BC) Sm[BOFF + stage * BT + (e / KC) * RS + e % KC] = v;
  }
}

// One output before the residual: the sum h of channel o (and its gate g under GEGLU) with
// the bias and the activation, the activation in afp as direct_f16's.
float finish(float h, float g, uint o, bool hasBias) {
  h += hasBias ? wbias_p(o) : 0.0;
  if (PAIRS == 2u) return h * float(gelu(afp(g + (hasBias ? wbias_p(p.F + o) : 0.0))));
  return p.epi == 0u ? h : float(apply(afp(h), p.epi - 1u));
}

void main() {
  const uint sg = SG_ID, sgm = sg % SGM, sgn = sg / SGM;
  const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
  // z = ks * N + b: N samples per K range (at SK = 1, z is the sample).
  const uint N = gl_NumWorkGroups.z / SK, b = gl_WorkGroupID.z % N, ks = gl_WorkGroupID.z / N;
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

  // This work-group's K steps [s0, s1): all of them at SK = 1; past the last step a range
  // is empty (its partials are zeros).
  const uint steps = (p.K + KS - 1u) / KS, per = (steps + SK - 1u) / SK;
  const uint s0 = min(steps, ks * per), s1 = min(steps, s0 + per);
  if (DB == 1u) {
    loadGlobal(b, m0, n0, s0 * KS);  // an empty range loads zeros (k >= K), never used
    storeShared(0u);
    barrier();
  }
  for (uint s = s0; s < s1; ++s) {
    uint stage = 0u;
    if (DB == 1u) {
      stage = (s - s0) & 1u;
      // Unconditionally (after a range's last step it loads the next range's first, or
      // element 0 past K, stored but never read): a branch here would put the loads' uses
      // before the products.
      loadGlobal(b, m0, n0, (s + 1u) * KS);  // in flight during the products
    } else {
      loadGlobal(b, m0, n0, s * KS);
      barrier();  // the previous step's coopmat loads of the tiles are done
      storeShared(0u);
      barrier();
    }
    [[unroll]] for (uint kk = 0u; kk < KS; kk += CK) {
      // A fragment i: rows (positions) (sgm * WM + i) * CM.., columns kk.. of the stage,
      // row-major (row r at As[.. + r * RS]); B fragment: rows kk.., columns (channels)
      // q * BN + (sgn * WN + j) * CN.., column-major (column c at Bs[.. + c * RS]); kk / 8:
      // offsets in uvec4s (CK is 8 or 16).
#if COOPMAT_EMULATE
      uint am[WM];  // in uvec4s, as the coopmat loads' offsets (ACOL: unused)
      [[unroll]] for (uint i = 0u; i < WM; ++i) am[i] = stage * AT + (sgm * WM + i) * CM * RS + kk / 8u;
      [[unroll]] for (uint q = 0u; q < PAIRS; ++q)
        [[unroll]] for (uint j = 0u; j < WN; ++j) {
          const uint bm = BOFF + stage * BT + (q * BN + (sgn * WN + j) * CN) * RS + kk / 8u;
          [[unroll]] for (uint i = 0u; i < WM; ++i) {
            const uint a = (q * WM + i) * WN + j;
            [[unroll]] for (uint r = 0u; r < CE; ++r) {
              const uint e = SG_LANE + r * 32u, row = e % CM, col = e / CM;
              float sum = 0.0;
#if EMULATE_ACOL
              // Module gemm_coopmat_emu_acol (ACOL = 1 alone; its own module, since lavapipe took
              // 20 times as long to compile the other module with both paths in it): A's column
              // j at k row kk + j, position (sgm * WM + i) * CM + row in it.
              const uint pos = (sgm * WM + i) * CM + row;
              [[dont_unroll]] for (uint j = 0u; j < CK; ++j)
                sum += sd_half(Sm[stage * AT + (kk + j) * RA + pos / 8u], pos % 8u) * sd_half(Sm[bm + col * RS + j / 8u], j % 8u);
#else
              [[unroll]] for (uint c = 0u; c < CK / 8u; ++c) sum += sd_dot8(Sm[am[i] + row * RS + c], Sm[bm + col * RS + c]);
#endif
              acc[a][r] += sum;
            }
          }
        }
#else
      fcoopmatNV<16, gl_ScopeSubgroup, CM, CK> am[WM];
      [[unroll]] for (uint i = 0u; i < WM; ++i) {
        if (ACOL == 1u)  // column-major: column k at k row kk + k, CM positions from the fragment's first
          coopMatLoadNV(am[i], Sm, stage * AT + kk * RA + (sgm * WM + i) * CM / 8u, RA, true);
        else
          coopMatLoadNV(am[i], Sm, stage * AT + (sgm * WM + i) * CM * RS + kk / 8u, RS, false);
      }
      [[unroll]] for (uint q = 0u; q < PAIRS; ++q)
        [[unroll]] for (uint j = 0u; j < WN; ++j) {
          fcoopmatNV<16, gl_ScopeSubgroup, CK, CN> bm;
          coopMatLoadNV(bm, Sm, BOFF + stage * BT + (q * BN + (sgn * WN + j) * CN) * RS + kk / 8u, RS, true);
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
      storeShared(stage ^ 1u);  // zeros after the last step, never read
      barrier();
    }
  }

  // Epilogue. The accumulators go to the C tile in shared memory (column-major: positions
  // contiguous), then the work-group's invocations finish it: bias, activation (GEGLU:
  // hidden * gelu(gate)), residual, the store, skipping positions past HW and writing 0 to
  // NC4HW4's padding channels. Under NC4HW4 an invocation takes 4 channels of a position
  // (one 8- or 16-byte load of the residual and store of y, neighbouring invocations
  // neighbouring positions); under NCHW and for split-K's raw sums one element (positions
  // contiguous either way); in NPASS passes where the whole tile does not fit over the
  // staging tiles. Before (session 40): one accumulator at a time through a
  // per-subgroup scratch, two barriers each, 2-byte stores 8 bytes apart under NC4HW4.
  const bool hasBias = (p.flags & 1u) != 0u, hasRes = (p.flags & 2u) != 0u;
  const uint stored = sd_stored_channels(LAYOUT, p.F), lid = gl_LocalInvocationID.x;
  [[unroll]] for (uint pi = 0u; pi < NPASS; ++pi) {
    // Before the first pass: every subgroup's products have read the stages (DB = 0 has
    // no barrier after the last); before the others: the previous pass's reads are done.
    barrier();
    [[unroll]] for (uint q = 0u; q < PAIRS; ++q)
      [[unroll]] for (uint i = 0u; i < WM; ++i)
        [[unroll]] for (uint jj = 0u; jj < EPJ; ++jj) {
          const uint a = (q * WM + i) * WN + pi * EPJ + jj;
          const uint off = (q * PBN + (sgn * EPJ + jj) * CN) * LDC + (sgm * WM + i) * CM;  // floats, a multiple of 4
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
        const uint tl = e % BM, cl = 4u * (e / BM), t = m0 + tl, o = n0 + tileChannel(cl, pi);
        if (t >= p.HW || o >= stored) continue;  // stored % 4 == 0: a quad is whole or past it
        const bvec4 real = lessThan(uvec4(o) + uvec4(0u, 1u, 2u, 3u), uvec4(p.F));  // not padding
        vec4 v = vec4(0.0);
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          if (real[j]) v[j] = finish(ctile(0u, cl + j, tl), PAIRS == 2u ? ctile(1u, cl + j, tl) : 0.0, o + j, hasBias);
        const uint qi = sd_index(LAYOUT, b, o, t, p.F, p.HW) / 4u;
        if (hasRes) v += mix(vec4(0.0), vec4(resq[qi]), real);
        yq[qi] = sfp4(v);
      }
    } else {
      for (uint e = lid; e < BM * PBN; e += WGS) {
        const uint tl = e % BM, cl = e / BM, t = m0 + tl, o = n0 + tileChannel(cl, pi);
        if (t >= p.HW || o >= stored) continue;
        if (SK > 1u) {  // raw sums of the weight rows o (and F + o); the reduce writes the pad channels
          if (o < p.F) {
            [[unroll]] for (uint q = 0u; q < PAIRS; ++q)
              part[((ks * N + b) * PAIRS * p.F + q * p.F + o) * p.HW + t] = ctile(q, cl, tl);
          }
          continue;
        }
        float out_ = 0.0;
        if (o < p.F) {
          out_ = finish(ctile(0u, cl, tl), PAIRS == 2u ? ctile(1u, cl, tl) : 0.0, o, hasBias);
          if (hasRes) out_ += float(res[sd_index(LAYOUT, b, o, t, p.F, p.HW)]);
        }
        y[sd_index(LAYOUT, b, o, t, p.F, p.HW)] = sfp(out_);
      }
    }
  }
}
