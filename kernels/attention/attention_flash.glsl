// attention.comp's stage 3, the flash variant (attn_flash of attention.cl, in the same
// order of operations). A row's statistics (max, sum) and its accumulator are float.
// In the f16-arithmetic modules (flash_f16) q (pre-scaled), the K/V tiles and the QK^T and
// PV products are f16vec4 (FVEC): a score's D/4 products per lane are summed in half and
// its 4 lanes in float; each chunk of KC keys' P V is summed in half (weights in [0, 1])
// and joins the float accumulator after the chunk's rescaling. The softmax statistics
// (max, sum), the exponentials and the rescaling stay float, as in softmax's
// cooperative_f16 (a half sum over thousands of keys would lose the small weights).
#if AFP_F16
#define FVEC f16vec4
#else
#define FVEC vec4
#endif

const uint N_KV = STAGE == 3u ? BK * HS : 1u;
shared FVEC FK[N_KV];  // FK[kk * HS + j]: slice j of key k0 + kk
shared FVEC FV[N_KV];

// Scores of keys c0 .. c0+KC-1 of every row (log2 units) into sc[r][c], the rows' maxima
// into cmax[r]. Each K slice is read from shared memory once for all RQ rows (and, the
// same address for the whole work-group, as a broadcast). CHECKED (a literal): apply the
// mask, the causal rule and the tile's end; whole unmasked chunks skip those tests.
#define FLASH_SCORES(CHECKED)                                                      \
  [[unroll]] for (uint c = 0u; c < KC; ++c) {                                                 \
    const uint kk = c0 + c, key = k0 + kk;                                         \
    FVEC d4[RQ];                                                                   \
    [[unroll]] for (uint r = 0u; r < RQ; ++r) d4[r] = FVEC(0.0);                              \
    [[unroll]] for (uint j = 0u; j < HS; ++j) {                                               \
      const FVEC kv = FK[kk * HS + j];                                             \
      [[unroll]] for (uint r = 0u; r < RQ; ++r) d4[r] = fma(qr[r][j], kv, d4[r]);             \
    }                                                                              \
    [[unroll]] for (uint r = 0u; r < RQ; ++r) {                                               \
      float x = (float(d4[r].x) + float(d4[r].y)) + (float(d4[r].z) + float(d4[r].w)); \
      if (CHECKED) {                                                               \
        const uint s = row0 + r * WG + lid;                                        \
        if (hasMask() && s < p.S && key < p.L) x += loadMask(b, s, key) * LOG2E;   \
        if (kk >= kn || (causal() && key > s)) x = NEG_INF;                        \
      }                                                                            \
      sc[r][c] = x;                                                                \
      cmax[r] = max(cmax[r], x);                                                   \
    }                                                                              \
  }

void flashStage() {
  const uint WG = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;
  const uint bh = gl_WorkGroupID.y, b = bh / p.H, h = bh % p.H;
  const uint row0 = gl_WorkGroupID.x * WG * RQ;
  const float qscale = p.scale * LOG2E;  // scores in log2 units: exp2 below
  FVEC qr[RQ][HS];
  vec4 acc[RQ][HS];
  float m[RQ], den[RQ];
  [[unroll]] for (uint r = 0u; r < RQ; ++r) {
    const uint s = row0 + r * WG + lid;
    [[unroll]] for (uint j = 0u; j < HS; ++j) {
      const vec4 qx = loadQ(b, h * HS + j, s < p.S ? s : 0u) * qscale;  // unconditional: SD_GUARD
      qr[r][j] = FVEC(s < p.S ? qx : vec4(0.0));
      acc[r][j] = vec4(0.0);
    }
    m[r] = NEG_INF;
    den[r] = 0.0;
  }
  // Under a causal mask no row of this group attends past its last row.
  const uint kend = causal() ? min(p.L, row0 + WG * RQ) : p.L;
  for (uint k0 = 0u; k0 < kend; k0 += BK) {
    barrier();
    // Four elements at a time: their loads first (unconditional: SD_GUARD, prelude.glsl),
    // their stores after, so eight vec4 loads are in flight at once (a whole block's
    // would not fit in registers at HS = 40).
    for (uint e0 = lid; e0 < BK * HS; e0 += 4u * WG) {
      vec4 kv[4], vv[4];
      [[unroll]] for (uint u = 0u; u < 4u; ++u) {
        const uint e = e0 + u * WG, kk = e % BK, j = e / BK, key = k0 + kk;  // neighbouring invocations: neighbouring keys
        const bool ok = all(bvec2(e < BK * HS, key < p.L));
        const vec4 kx = loadK(b, h * HS + SD_GUARD(ok, j), SD_GUARD(ok, key));
        const vec4 vx = loadV(b, h * HS + SD_GUARD(ok, j), SD_GUARD(ok, key));
        kv[u] = ok ? kx : vec4(0.0);
        vv[u] = ok ? vx : vec4(0.0);
      }
      [[unroll]] for (uint u = 0u; u < 4u; ++u) {
        const uint e = e0 + u * WG;
        if (e < BK * HS) {
          FK[(e % BK) * HS + e / BK] = FVEC(kv[u]);
          FV[(e % BK) * HS + e / BK] = FVEC(vv[u]);
        }
      }
    }
    barrier();
    const uint kn = min(BK, kend - k0);
    for (uint c0 = 0u; c0 < kn; c0 += KC) {
      float sc[RQ][KC], cmax[RQ], mref[RQ];
      [[unroll]] for (uint r = 0u; r < RQ; ++r) cmax[r] = NEG_INF;
      if (!causal() && !hasMask() && c0 + KC <= kn) {
        FLASH_SCORES(false)
      } else {
        FLASH_SCORES(true)
      }
      [[unroll]] for (uint r = 0u; r < RQ; ++r) {
        const float mnew = max(m[r], cmax[r]);
        // A row with every key so far masked keeps max -inf: exponentiate against 0
        // instead (all its weights are 0 either way), never -inf - -inf.
        mref[r] = mnew == NEG_INF ? 0.0 : mnew;
        const float corr = exp2(m[r] - mref[r]);
        m[r] = mnew;
        den[r] *= corr;
        [[unroll]] for (uint j = 0u; j < HS; ++j) acc[r][j] *= corr;
      }
#if AFP_F16
      FVEC part[RQ][HS];  // this chunk's P V, in half
      [[unroll]] for (uint r = 0u; r < RQ; ++r)
        [[unroll]] for (uint j = 0u; j < HS; ++j) part[r][j] = FVEC(0.0);
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
        [[unroll]] for (uint j = 0u; j < HS; ++j) {
          const FVEC vv = FV[(c0 + c) * HS + j];  // read once for all RQ rows
          [[unroll]] for (uint r = 0u; r < RQ; ++r) SD_FLASH_ACC[r][j] = fma(FVEC(pr[r]), vv, SD_FLASH_ACC[r][j]);
        }
      }
#if AFP_F16
      [[unroll]] for (uint r = 0u; r < RQ; ++r)
        [[unroll]] for (uint j = 0u; j < HS; ++j) acc[r][j] += vec4(part[r][j]);
#endif
#undef SD_FLASH_ACC
    }
  }
  [[unroll]] for (uint r = 0u; r < RQ; ++r) {
    const uint s = row0 + r * WG + lid;
    if (s >= p.S) continue;
    const float inv = 1.0 / den[r];
    [[unroll]] for (uint j = 0u; j < HS; ++j) storeOut(b, h * HS + j, s, acc[r][j] * inv);
  }
}
