#version 450
// GEMM / Linear on Vulkan, the tiled variant of gemm.cl (same parameters, same
// epilogues as gemm.comp):
//   y[b, o, t] = epilogue(sum_k x[b, k, t] w[r, k] + bias[r]) (+ residual[b, o, t])
// A work-group computes an MWG (positions) x NWG (output channels) tile of one sample,
// each invocation MWI x NWI outputs in registers (twice that under GEGLU: hidden and
// gate rows); K advances KWG at a time through shared memory: the x tile always, the w
// tile when SB = 1 (else each invocation reads its w values from global memory). PF = 1:
// the next step's tiles are loaded into registers before this step computes.
// An invocation's positions are tm + i * MD and its channels tn + j * ND (MD = MWG / MWI,
// ND = NWG / NWI): neighbouring invocations touch neighbouring positions, so x loads and
// y stores coalesce in both layouts. VEC (gemm.cl's floatVEC reads of the x tile) is
// accepted and has no effect here: SPIR-V compilers vectorize shared-memory reads themselves.
// In the f16-arithmetic modules (tiled_f16) the tiles are afp in shared memory (rounded
// once, when stored), the products and their sum over one KWG step are afp, and each
// step's sum joins a float accumulator: direct_f16's scheme with a chunk of KWG products
// (gemm.cl says why: all of K in half grows as u sqrt(K)); the epilogue runs in afp.
// f16 storage through sfp. NC4HW4 padding lanes written 0.
#include "../common/prelude.glsl"
#include "../common/act.glsl"
#include "../common/weights.glsl"

layout(local_size_x_id = 0) in;  // (MWG / MWI) * (NWG / NWI)
layout(constant_id = 1) const uint MWG = 64;
layout(constant_id = 2) const uint NWG = 64;
layout(constant_id = 3) const uint KWG = 16;
layout(constant_id = 4) const uint MWI = 4;
layout(constant_id = 5) const uint NWI = 4;
layout(constant_id = 6) const uint SB = 1;
layout(constant_id = 7) const uint PAIRS = 1;  // 2 under GEGLU (hidden and gate rows)
layout(constant_id = 8) const uint PF = 0;

const uint MD = MWG / MWI, ND = NWG / NWI, WGS = MD * ND;
const uint XT = KWG * MWG;                 // x tile elements
const uint WT = KWG * PAIRS * NWG * SB;    // w tile elements (0 without SB)
const uint XL = (XT + WGS - 1u) / WGS;     // x elements each invocation loads
const uint WL = (WT + WGS - 1u) / WGS;     // w elements each invocation loads

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
SD_WEIGHT_BUFFER(1, W, w)         // in SD_WFMT (weights.glsl)
SD_WEIGHT_BUFFER(2, Bias, wbias)  // in SD_PFMT
layout(std430, binding = 3) readonly buffer R { sfp res[]; };
layout(std430, binding = 4) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint K, F, HW, epi, flags, layout_;  // flags: 1 bias, 2 residual
} p;

shared afp As[XT];      // k-major: row kk holds the MWG positions
shared afp Bs[WT + 1u]; // k-major: PAIRS * NWG channels per row (+1: never 0-sized)

float xr[XL];
float wr[WL + 1u];

// The tiles of step k0 into registers: x[b, k0 + kk, m0 + mm] and w[row, k0 + kk], 0
// past K, past the positions or past the channels.
void loadGlobal(uint b, uint m0, uint n0, uint k0) {
  const uint lid = gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0u; i < XL; ++i) {
    const uint e = lid + i * WGS, kk = e / MWG, mm = e % MWG;
    const uint k = k0 + kk, t = m0 + mm;
    const bool ok = all(bvec3(e < XT, k < p.K, t < p.HW));  // branch-free: SD_GUARD in prelude.glsl
    const float v = float(x[sd_index(p.layout_, b, SD_GUARD(ok, k), SD_GUARD(ok, t), p.K, p.HW)]);
    xr[i] = ok ? v : 0.0;
  }
  if (SB == 1u) {
    [[unroll]] for (uint i = 0u; i < WL; ++i) {
      // kk fastest: neighbouring invocations read a w row's consecutive elements.
      const uint e = lid + i * WGS, kk = e % KWG, nn = e / KWG;
      const uint pair = nn / NWG, o = n0 + nn % NWG, k = k0 + kk;
      const bool ok = all(bvec3(e < WT, k < p.K, o < p.F));
      const uint row = pair * p.F + o;  // a named value: SD_GUARD of an expression is a branch
      const float v = w_w(SD_GUARD(ok, row), SD_GUARD(ok, k), p.K);
      wr[i] = ok ? v : 0.0;
    }
  }
}

void storeShared() {
  const uint lid = gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0u; i < XL; ++i) {
    const uint e = lid + i * WGS;
    if (e < XT) As[e] = afp(xr[i]);
  }
  if (SB == 1u)
    [[unroll]] for (uint i = 0u; i < WL; ++i) {
      const uint e = lid + i * WGS;
      if (e < WT) Bs[(e % KWG) * (PAIRS * NWG) + e / KWG] = afp(wr[i]);
    }
}

void main() {
  const uint lid = gl_LocalInvocationID.x, tm = lid % MD, tn = lid / MD;
  const uint m0 = gl_WorkGroupID.x * MWG, n0 = gl_WorkGroupID.y * NWG, b = gl_WorkGroupID.z;
  float acc[MWI][2u * NWI];  // hidden columns, then gate columns (GEGLU)
  [[unroll]] for (uint i = 0u; i < MWI; ++i)
    [[unroll]] for (uint j = 0u; j < 2u * NWI; ++j) acc[i][j] = 0.0;

  if (PF == 1u) loadGlobal(b, m0, n0, 0u);
  for (uint k0 = 0u; k0 < p.K; k0 += KWG) {
    if (PF == 0u) loadGlobal(b, m0, n0, k0);
    barrier();  // the previous step's reads of the tiles are done
    storeShared();
    barrier();
    if (PF == 1u && k0 + KWG < p.K) loadGlobal(b, m0, n0, k0 + KWG);  // in flight while this step computes
#if AFP_F16
    afp part[MWI][2u * NWI];  // this step's sums, in half
    [[unroll]] for (uint i = 0u; i < MWI; ++i)
      [[unroll]] for (uint j = 0u; j < 2u * NWI; ++j) part[i][j] = afp(0.0);
#define SD_GEMM_ACC part
#else
#define SD_GEMM_ACC acc
#endif
    [[unroll]] for (uint kk = 0u; kk < KWG; ++kk) {
      afp a[MWI];
      [[unroll]] for (uint i = 0u; i < MWI; ++i) a[i] = As[kk * MWG + tm + i * MD];
      [[unroll]] for (uint q = 0u; q < PAIRS; ++q)
        [[unroll]] for (uint j = 0u; j < NWI; ++j) {
          afp bv;
          if (SB == 1u) {
            bv = Bs[kk * (PAIRS * NWG) + q * NWG + tn + j * ND];
          } else {
            // Straight from global memory: past K or past F a clamped index (x is 0 there,
            // or the output is not stored).
            const uint o = min(n0 + tn + j * ND, p.F - 1u), k = min(k0 + kk, p.K - 1u);
            bv = afp(w_w(q * p.F + o, k, p.K));
          }
          [[unroll]] for (uint i = 0u; i < MWI; ++i) SD_GEMM_ACC[i][q * NWI + j] += a[i] * bv;
        }
    }
#if AFP_F16
    [[unroll]] for (uint i = 0u; i < MWI; ++i)
      [[unroll]] for (uint j = 0u; j < PAIRS * NWI; ++j) acc[i][j] += float(part[i][j]);
#endif
  }

  const bool hasBias = (p.flags & 1u) != 0u, hasRes = (p.flags & 2u) != 0u;
  const uint stored = sd_stored_channels(p.layout_, p.F);
  [[unroll]] for (uint j = 0u; j < NWI; ++j) {
    const uint o = n0 + tn + j * ND;
    if (o >= stored) continue;
    [[unroll]] for (uint i = 0u; i < MWI; ++i) {
      const uint t = m0 + tm + i * MD;
      if (t >= p.HW) continue;
      // In afp (float in the f32 modules, so their arithmetic is unchanged).
      afp out_ = afp(0.0);
      if (o < p.F) {
        const afp h = afp(acc[i][j] + (hasBias ? wbias_p(o) : 0.0));
        if (PAIRS == 2u) {
          const afp g = afp(acc[i][NWI + j] + (hasBias ? wbias_p(p.F + o) : 0.0));
          out_ = h * gelu(g);
        } else {
          out_ = p.epi == 0u ? h : apply(h, p.epi - 1u);
        }
        if (hasRes) out_ += afp(res[sd_index(p.layout_, b, o, t, p.F, p.HW)]);
      }
      y[sd_index(p.layout_, b, o, t, p.F, p.HW)] = sfp(out_);
    }
  }
}
