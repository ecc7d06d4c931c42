// attention.comp's stage 4: flash for heads wider than D = 160 (the VAE's D = 512), on
// Vulkan only. Whole rows in registers (stage 3) would need 2*D floats per row, so a
// row's HS slices are split across PARTS invocations (adjacent lanes, PARTS a power of
// two, HSL <= 16 slices each; AttentionFamily::flashWideParts). Per chunk of KC keys:
//   the K tile (KC keys x HS slices) is staged in shared memory; each invocation forms
//   its partial dot products over its slices into WP; after a barrier each invocation
//   sums its row's PARTS partials (every part of a row gets the same scores, so the
//   online softmax statistics, float, stay identical across them); then the V tile
//   replaces the K tile and each invocation updates its slices of the accumulator.
// RQ rows per invocation as in stage 3 (row r of slot is query row0 + r * RW + slot).
// Work-group WG, groups (ceil(S / (RW * RQ)), B*H), RW = WG / PARTS.
// flash_f16 (the f16-arithmetic modules): as stage 3, FVEC tiles, q and products, each
// chunk's P V summed in half; the partial scores WP, statistics and accumulator float.

layout(constant_id = 8) const uint PARTS = 8;
const uint HSL = (HS + PARTS - 1u) / PARTS;  // slices per invocation
const uint N_WT = STAGE == 4u ? KC * HS : 1u;
shared FVEC WT[N_WT];  // WT[kk * HS + j]: slice j of key k0 + kk (K, then V)
const uint N_WP = STAGE == 4u ? RQ * gl_WorkGroupSize.x * KC : 1u;
shared float WP[N_WP];  // WP[(r * WG + lid) * KC + c]: partial score of row r, key c

void flashWideStage() {
  const uint WG = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;
  const uint RW = WG / PARTS, slot = lid / PARTS, part = lid % PARTS, j0 = part * HSL;
  const uint bh = gl_WorkGroupID.y, b = bh / p.H, h = bh % p.H;
  const uint row0 = gl_WorkGroupID.x * RW * RQ;
  const float qscale = p.scale * LOG2E;
  FVEC qr[RQ][HSL];
  vec4 acc[RQ][HSL];
  float m[RQ], den[RQ];
  [[unroll]] for (uint r = 0u; r < RQ; ++r) {
    const uint s = row0 + r * RW + slot;
    [[unroll]] for (uint j = 0u; j < HSL; ++j) {
      qr[r][j] = FVEC((s < p.S && j0 + j < HS) ? loadQ(b, h * HS + j0 + j, s) * qscale : vec4(0.0));
      acc[r][j] = vec4(0.0);
    }
    m[r] = NEG_INF;
    den[r] = 0.0;
  }
  const uint kend = causal() ? min(p.L, row0 + RW * RQ) : p.L;
  for (uint k0 = 0u; k0 < kend; k0 += KC) {
    const uint kn = min(KC, kend - k0);
    barrier();  // the previous chunk's V tile is read
    for (uint e = lid; e < KC * HS; e += WG) {
      const uint kk = e % KC, j = e / KC, key = k0 + kk;  // neighbouring invocations: neighbouring keys
      WT[kk * HS + j] = FVEC(key < p.L ? loadK(b, h * HS + j, key) : vec4(0.0));
    }
    barrier();
    [[unroll]] for (uint c = 0u; c < KC; ++c) {
      FVEC d4[RQ];
      [[unroll]] for (uint r = 0u; r < RQ; ++r) d4[r] = FVEC(0.0);
      [[unroll]] for (uint j = 0u; j < HSL; ++j) {
        if (j0 + j >= HS) break;
        const FVEC kv = WT[c * HS + j0 + j];
        [[unroll]] for (uint r = 0u; r < RQ; ++r) d4[r] = fma(qr[r][j], kv, d4[r]);
      }
      [[unroll]] for (uint r = 0u; r < RQ; ++r)
        WP[(r * WG + lid) * KC + c] = (float(d4[r].x) + float(d4[r].y)) + (float(d4[r].z) + float(d4[r].w));
    }
    barrier();
    float sc[RQ][KC], mref[RQ];
    [[unroll]] for (uint r = 0u; r < RQ; ++r) {
      const uint s = row0 + r * RW + slot;
      float cmax = NEG_INF;
      [[unroll]] for (uint c = 0u; c < KC; ++c) {
        const uint key = k0 + c;
        float x = 0.0;
        [[unroll]] for (uint pp = 0u; pp < PARTS; ++pp) x += WP[(r * WG + slot * PARTS + pp) * KC + c];
        if (hasMask() && s < p.S && key < p.L) x += loadMask(b, s, key) * LOG2E;
        if (c >= kn || (causal() && key > s)) x = NEG_INF;
        sc[r][c] = x;
        cmax = max(cmax, x);
      }
      const float mnew = max(m[r], cmax);
      mref[r] = mnew == NEG_INF ? 0.0 : mnew;  // a row masked so far: never -inf - -inf
      const float corr = exp2(m[r] - mref[r]);
      m[r] = mnew;
      den[r] *= corr;
      [[unroll]] for (uint j = 0u; j < HSL; ++j) acc[r][j] *= corr;
    }
    barrier();  // the K tile is read: V replaces it
    for (uint e = lid; e < KC * HS; e += WG) {
      const uint kk = e % KC, j = e / KC, key = k0 + kk;
      WT[kk * HS + j] = FVEC(key < p.L ? loadV(b, h * HS + j, key) : vec4(0.0));
    }
    barrier();
#if AFP_F16
    FVEC part[RQ][HSL];  // this chunk's P V, in half
    [[unroll]] for (uint r = 0u; r < RQ; ++r)
      [[unroll]] for (uint j = 0u; j < HSL; ++j) part[r][j] = FVEC(0.0);
#define SD_FLASH_ACC part
#else
#define SD_FLASH_ACC acc
#endif
    [[unroll]] for (uint c = 0u; c < KC; ++c) {
      float pr[RQ];
      [[unroll]] for (uint r = 0u; r < RQ; ++r) {
        pr[r] = exp2(sc[r][c] - mref[r]);
        den[r] += pr[r];
      }
      [[unroll]] for (uint j = 0u; j < HSL; ++j) {
        if (j0 + j >= HS) break;
        const FVEC vv = WT[c * HS + j0 + j];
        [[unroll]] for (uint r = 0u; r < RQ; ++r) SD_FLASH_ACC[r][j] = fma(FVEC(pr[r]), vv, SD_FLASH_ACC[r][j]);
      }
    }
#if AFP_F16
    [[unroll]] for (uint r = 0u; r < RQ; ++r)
      [[unroll]] for (uint j = 0u; j < HSL; ++j) acc[r][j] += vec4(part[r][j]);
#endif
#undef SD_FLASH_ACC
  }
  [[unroll]] for (uint r = 0u; r < RQ; ++r) {
    const uint s = row0 + r * RW + slot;
    if (s >= p.S) continue;
    const float inv = 1.0 / den[r];
    [[unroll]] for (uint j = 0u; j < HSL; ++j)
      if (j0 + j < HS) storeOut(b, h * HS + j0 + j, s, acc[r][j] * inv);
  }
}
