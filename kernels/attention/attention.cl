// Multi-head attention out = softmax(Q K^T * scale + mask) V.
// Q, K, V and out are token tensors (N=B, C=H*D, H=1, W=S or L) with the heads
// interleaved in the channels; head h is channels [h*D, (h+1)*D), read as D/4 float4
// slices through the accessors (the family requires D % 4 == 0), so every storage
// format works. `mask` is an f32 parameter buffer [B, 1, S, L] added to the scaled
// scores when hasMask; causal masks keys l > s (top-left aligned, as PyTorch).
//
// Variants (selected by #define):
//   NAIVE / PARTIAL: attn_scores writes the raw scores (B*H*S*L floats) to scratch;
//     attn_row_softmax reduces each row to (max, 1/sum) in one pass (online
//     rescaling); NAIVE then normalizes the rows in place and attn_pv multiplies the
//     stored probabilities by V, PARTIAL (the paper's partially fused softmax) only
//     stores the two statistics and attn_pv applies exp(x - max) while it loads the
//     scores (and 1/sum to each output), so the normalized matrix is never written or
//     read back.
//     Parameters: T (work-group T x T), R (R x R outputs per work-item), SWG (the
//     row-reduction work-group).
//   FLASH: attn_flash, one kernel: each work-item owns RQ query rows (q and the output
//     accumulator in registers, HS = D/4 float4 each, HS a per-problem #define), the
//     work-group streams K/V tiles of BK keys through local memory and keeps a running
//     max and sum per row (online softmax), rescaling once per chunk of KC keys. The
//     S x L matrix never exists in memory. Scale * log2(e) is folded into q so the
//     exponentials are exp2.

inline float2 attn_combine(float2 a, float2 b) {  // (max, sum of exp(x - max))
  const float m = fmax(a.x, b.x);
  if (m == -INFINITY) return (float2)(m, 0.0f);
  return (float2)(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

#if defined(NAIVE) || defined(PARTIAL)
#define TT (T * R)
#define KS 4   // head slices (16 channels) per local-memory stage of attn_scores
#define KL 16  // keys per local-memory stage of attn_pv

// Grid (ceil(L / TT) * T, ceil(S / TT) * T, B*H), local (T, T, 1).
__kernel __attribute__((reqd_work_group_size(T, T, 1)))
void attn_scores(q_PARAMS, k_PARAMS, mask_PARAMS, SD_REGION(float, scores), const int H, const float scale,
                 const int causal, const int hasMask) {
  __global float* scores = SD_AT(scores);
  __local float4 Qs[TT][KS + 1];  // + 1: rows of Ks read by neighbouring work-items
  __local float4 Ks[TT][KS + 1];  // fall in different banks
  const int tx = get_local_id(0), ty = get_local_id(1), lid = ty * T + tx;
  const int bh = get_global_id(2), b = bh / H, h = bh % H;
  const int S = q_HW, L = k_HW, D4 = q_C / (4 * H);
  const int s0 = get_group_id(1) * TT, l0 = get_group_id(0) * TT;
  float acc[R][R];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < R; ++j) acc[i][j] = 0.0f;
  for (int j0 = 0; j0 < D4; j0 += KS) {
    barrier(CLK_LOCAL_MEM_FENCE);
    // Neighbouring work-items load neighbouring tokens: contiguous in NCHW and NC4HW4.
    for (int e = lid; e < TT * KS; e += T * T) {
      const int r = e % TT, j = e / TT;
      const bool inD = j0 + j < D4;
      Qs[r][j] = (inD && s0 + r < S) ? q_LOAD4(b, h * D4 + j0 + j, s0 + r) : (float4)(0.0f);
      Ks[r][j] = (inD && l0 + r < L) ? k_LOAD4(b, h * D4 + j0 + j, l0 + r) : (float4)(0.0f);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = 0; j < KS; ++j)
      for (int i = 0; i < R; ++i) {
        const float4 qv = Qs[ty + i * T][j];
        for (int c = 0; c < R; ++c) acc[i][c] += dot(qv, Ks[tx + c * T][j]);
      }
  }
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < R; ++c) {
      const int s = s0 + ty + i * T, l = l0 + tx + c * T;
      if (s >= S || l >= L) continue;
      float x = acc[i][c] * scale;
      if (hasMask) x += mask_LOAD(b, 0, s * L + l);
      if (causal && l > s) x = -INFINITY;
      scores[((size_t)bh * S + s) * L + l] = x;
    }
}

// Grid (SWG, B*H*S): one work-group per score row. Every row gets (max, 1/sum);
// normalize != 0 also rewrites the row as probabilities (the naive softmax).
__kernel __attribute__((reqd_work_group_size(SWG, 1, 1)))
void attn_row_softmax(SD_REGION(float, scores), SD_REGION(float2, stats), const int L, const int normalize) {
  __global float2* stats = SD_AT(stats);
  __global float* scores = SD_AT(scores);
  __local float2 buf[SWG];
  const int lid = get_local_id(0);
  const size_t row = get_global_id(1);
  __global float* x = scores + row * L;
  float2 ms = (float2)(-INFINITY, 0.0f);
  for (int l = lid; l < L; l += SWG) ms = attn_combine(ms, (float2)(x[l], 1.0f));
  buf[lid] = ms;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int n = SWG / 2; n > 0; n /= 2) {
    if (lid < n) buf[lid] = attn_combine(buf[lid], buf[lid + n]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float m = buf[0].x, inv = 1.0f / buf[0].y;
  if (normalize) {
    for (int l = lid; l < L; l += SWG) x[l] = exp(x[l] - m) * inv;
  } else if (lid == 0) {
    stats[row] = (float2)(m, inv);
  }
}

// Grid (ceil(D4 / TT) * T, ceil(S / TT) * T, B*H), local (T, T, 1): each work-item
// computes R rows x R head slices of the output. useStats: the scores are raw and
// stats holds (max, 1/sum) per row (PARTIAL); else they are probabilities (NAIVE).
__kernel __attribute__((reqd_work_group_size(T, T, 1)))
void attn_pv(v_PARAMS, out_PARAMS, SD_REGION(const float, scores), SD_REGION(const float2, stats), const int H,
             const int useStats) {
  __global const float2* stats = SD_AT(stats);
  __global const float* scores = SD_AT(scores);
  __local float Ps[TT][KL];
  __local float4 Vs[KL][TT];
  __local float Mx[TT];  // the tile rows' maxima (useStats)
  const int tx = get_local_id(0), ty = get_local_id(1), lid = ty * T + tx;
  const int bh = get_global_id(2), b = bh / H, h = bh % H;
  const int S = out_HW, L = v_HW, D4 = out_C / (4 * H);
  const int s0 = get_group_id(1) * TT, j0 = get_group_id(0) * TT;
  if (useStats)
    for (int r = lid; r < TT; r += T * T) Mx[r] = s0 + r < S ? stats[(size_t)bh * S + s0 + r].x : 0.0f;
  float4 acc[R][R];
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < R; ++c) acc[i][c] = (float4)(0.0f);
  for (int l0 = 0; l0 < L; l0 += KL) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < TT * KL; e += T * T) {
      const int r = e / KL, c = e % KL, s = s0 + r, l = l0 + c;
      float p = 0.0f;
      if (s < S && l < L) {
        p = scores[((size_t)bh * S + s) * L + l];
        if (useStats) p = exp(p - Mx[r]);  // 1/sum is applied once per output below
      }
      Ps[r][c] = p;
    }
    for (int e = lid; e < KL * TT; e += T * T) {
      const int c = e % KL, j = e / KL, l = l0 + c;  // neighbouring items: neighbouring keys
      Vs[c][j] = (l < L && j0 + j < D4) ? v_LOAD4(b, h * D4 + j0 + j, l) : (float4)(0.0f);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int c = 0; c < KL; ++c)
      for (int i = 0; i < R; ++i) {
        const float p = Ps[ty + i * T][c];
        for (int jj = 0; jj < R; ++jj) acc[i][jj] += p * Vs[c][tx + jj * T];
      }
  }
  for (int i = 0; i < R; ++i)
    for (int jj = 0; jj < R; ++jj) {
      const int s = s0 + ty + i * T, j = j0 + tx + jj * T;
      if (s >= S || j >= D4) continue;
      out_STORE4(b, h * D4 + j, s, useStats ? acc[i][jj] * stats[(size_t)bh * S + s].y : acc[i][jj]);
    }
}
#endif  // NAIVE || PARTIAL

#ifdef FLASH
// NATIVE: native_exp2 (the hardware's approximation; NVIDIA's ex2.approx is ~2 ulp)
// instead of the correctly rounded-ish exp2. The accuracy check decides whether a
// device's native_exp2 is good enough; the tuner only times points that pass it.
#if NATIVE
#define FLASH_EXP2 native_exp2
#else
#define FLASH_EXP2 exp2
#endif
// flash_f16 (SD_HALF, cl_khr_fp16): q (pre-scaled), the K/V tiles and the QK^T and PV
// products are half4 (FLASH_T4): a score's HS products per lane are summed in half and
// its 4 lanes in f32; each chunk of KC keys' P V (weights in [0, 1]) is summed in half
// and joins the f32 accumulator after the chunk's rescaling. The softmax statistics (max,
// sum), the exponentials and the rescaling stay f32, as in softmax's cooperative_f16: a
// half sum over thousands of keys would lose the small weights.
#ifdef SD_HALF
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#define FLASH_T4 half4
#define FLASH_TO_T4(v) convert_half4(v)
#define FLASH_TO_F4(v) convert_float4(v)
#else
#define FLASH_T4 float4
#define FLASH_TO_T4(v) (v)
#define FLASH_TO_F4(v) (v)
#endif
// Scores of keys c0 .. c0+KC-1 of every row (log2 units) into sc[r][c], the rows' maxima
// into cmax[r]. Each K slice is read from local memory once for all RQ rows.
// CHECKED (a literal): apply the mask, the causal rule and the tile's end.
#define FLASH_SCORES(CHECKED)                                                        \
  for (int c = 0; c < KC; ++c) {                                                     \
    const int kk = c0 + c, key = k0 + kk;                                            \
    FLASH_T4 d4[RQ];                                                                 \
    for (int r = 0; r < RQ; ++r) d4[r] = (FLASH_T4)(0.0f);                           \
    for (int j = 0; j < HS; ++j) {                                                   \
      const FLASH_T4 kv = Ks[kk][j];                                                 \
      for (int r = 0; r < RQ; ++r) d4[r] = fma(qr[r][j], kv, d4[r]);                 \
    }                                                                                \
    for (int r = 0; r < RQ; ++r) {                                                   \
      const float4 d4f = FLASH_TO_F4(d4[r]);                                         \
      float x = (d4f.x + d4f.y) + (d4f.z + d4f.w);                                   \
      if (CHECKED) {                                                                 \
        const int s = row0 + r * WG + lid;                                           \
        if (hasMask && s < S && key < L) x += mask_LOAD(b, 0, s * L + key) * M_LOG2E_F; \
        if (kk >= kn || (causal && key > s)) x = -INFINITY;                          \
      }                                                                              \
      sc[r][c] = x;                                                                  \
      cmax[r] = fmax(cmax[r], x);                                                    \
    }                                                                                \
  }

// Grid (ceil(S / (WG * RQ)) * WG, B*H), local (WG, 1). Row r of a work-item is query
// s = group * WG * RQ + r * WG + lid.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void attn_flash(q_PARAMS, k_PARAMS, v_PARAMS, mask_PARAMS, out_PARAMS, const int H, const float scale,
                const int causal, const int hasMask) {
  __local FLASH_T4 Ks[BK][HS];
  __local FLASH_T4 Vs[BK][HS];
  const int lid = get_local_id(0);
  const int bh = get_group_id(1), b = bh / H, h = bh % H;
  const int S = q_HW, L = k_HW;
  const int row0 = get_group_id(0) * WG * RQ;
  const float qscale = scale * M_LOG2E_F;
  FLASH_T4 qr[RQ][HS];
  float4 acc[RQ][HS];
  float m[RQ], den[RQ];
  for (int r = 0; r < RQ; ++r) {
    const int s = row0 + r * WG + lid;
    for (int j = 0; j < HS; ++j) {
      qr[r][j] = FLASH_TO_T4(s < S ? q_LOAD4(b, h * HS + j, s) * qscale : (float4)(0.0f));
      acc[r][j] = (float4)(0.0f);
    }
    m[r] = -INFINITY;
    den[r] = 0.0f;
  }
  // Under a causal mask no row of this group attends past its last row.
  const int kend = causal ? min(L, row0 + WG * RQ) : L;
  for (int k0 = 0; k0 < kend; k0 += BK) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < BK * HS; e += WG) {
      const int kk = e % BK, j = e / BK, key = k0 + kk;  // neighbouring items: neighbouring keys
      Ks[kk][j] = FLASH_TO_T4(key < L ? k_LOAD4(b, h * HS + j, key) : (float4)(0.0f));
      Vs[kk][j] = FLASH_TO_T4(key < L ? v_LOAD4(b, h * HS + j, key) : (float4)(0.0f));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int kn = min(BK, kend - k0);
    for (int c0 = 0; c0 < kn; c0 += KC) {
      float sc[RQ][KC], cmax[RQ], mref[RQ];
      for (int r = 0; r < RQ; ++r) cmax[r] = -INFINITY;
      // Whole chunks without masks (uniform across the work-group) skip the checks.
      if (!causal && !hasMask && c0 + KC <= kn) {
        FLASH_SCORES(0)
      } else {
        FLASH_SCORES(1)
      }
      for (int r = 0; r < RQ; ++r) {
        const float mnew = fmax(m[r], cmax[r]);
        // A row with every key so far masked keeps max -inf: exponentiate against 0
        // instead (all its weights are 0 either way), never -inf - -inf.
        mref[r] = mnew == -INFINITY ? 0.0f : mnew;
        const float corr = FLASH_EXP2(m[r] - mref[r]);
        m[r] = mnew;
        den[r] *= corr;
        for (int j = 0; j < HS; ++j) acc[r][j] *= corr;
      }
#ifdef SD_HALF
      half4 part[RQ][HS];  // this chunk's P V, in half
      for (int r = 0; r < RQ; ++r)
        for (int j = 0; j < HS; ++j) part[r][j] = (half4)(0.0h);
#define FLASH_ACC part
#else
#define FLASH_ACC acc
#endif
      for (int c = 0; c < KC; ++c) {
        float p[RQ];
        for (int r = 0; r < RQ; ++r) {
          p[r] = FLASH_EXP2(sc[r][c] - mref[r]);
          den[r] += p[r];
        }
        for (int j = 0; j < HS; ++j) {
          const FLASH_T4 vv = Vs[c0 + c][j];  // read once for all RQ rows
          for (int r = 0; r < RQ; ++r) FLASH_ACC[r][j] = fma((FLASH_T4)(p[r]), vv, FLASH_ACC[r][j]);
        }
      }
#ifdef SD_HALF
      for (int r = 0; r < RQ; ++r)
        for (int j = 0; j < HS; ++j) acc[r][j] += convert_float4(part[r][j]);
#endif
#undef FLASH_ACC
    }
  }
  for (int r = 0; r < RQ; ++r) {
    const int s = row0 + r * WG + lid;
    if (s >= S) continue;
    const float inv = 1.0f / den[r];
    for (int j = 0; j < HS; ++j) out_STORE4(b, h * HS + j, s, acc[r][j] * inv);
  }
}
#endif  // FLASH
