// GEMM / Linear with fused epilogues (kernels/gemm/README.md: design and parameters).
//   y[b, o, t] = epilogue(sum_k x[b, k, t] w[r, k] + bias[r]) (+ residual[b, o, t])
// x: activation [B, K, H, W], t over its H*W positions (a token tensor is Bx Kx1xT);
// y (and residual): activation [B, F, H, W]; w: f32 parameter [R, K, 1, 1] (the
// Linear weight, out x in); bias: f32 parameter [1, R, 1, 1] (or one unused element).
// Without GEGLU, F = R and epi selects the activation (a kernel argument):
//   0 none, 1 gelu (erf), 2 gelu_tanh, 3 quick_gelu (x sigmoid(1.702 x)), 4 silu.
// With GEGLU (a #define the family sets per problem: it doubles the accumulators),
// R = 2F and y = (hidden + b_h) * gelu(gate + b_g), hidden = w rows [0, F), gate =
// rows [F, 2F): each work-group tile holds the hidden and gate rows of the same
// output channels, so the pairs meet in one work-item's registers (the weight
// "reorder" is done by indexing, no host permutation). residual is added last.
// Every activation is read with LOAD4 (4 channels of one position) and written with
// STORE4, so every storage format works; lanes past K read 0 (accessors).
//
// Variants (selected by #define):
//   TILED: gemm_tiled, a work-group computes an MWG (positions) x NWG (output
//     channels) tile, each work-item MWI x NWI outputs in registers (x PAIRS = 2
//     accumulators under GEGLU); K advances KWG at a time through local memory: the
//     x tile always, the w tile when SB = 1 (else each work-item reads its w values
//     from global memory, through the cache). VEC (1 or 4): a work-item's positions
//     are VEC consecutive ones per group, read from local memory as floatVEC; its
//     channels are always groups of 4 consecutive ones (float4 reads, STORE4). PF:
//     the next step's tiles are loaded into registers before this step computes
//     (one barrier pair per step either way). Constraints make every work-item load
//     whole float4 of each tile (no partial load loops).
//   tiled_f16 (TILED + SD_HALF): gemm_tiled with half tiles and products, each KWG
//     step's products summed in half, those sums in f32 (see realT below).
//   DIRECT: gemm_direct, the ablation baseline: one work-item per (position, 4 output
//     channels), no local memory, K loop over float4 slices of x; WG work-items.
//   GEMV: gemm_gemv, for a few positions (B*H*W <= 8): each (position, 4 output channels)
//     dot product split over a work-group of WG work-items, summed in local memory.

#ifndef GEGLU
#define GEGLU 0
#endif
#define PAIRS (GEGLU + 1)

inline float4 gemm_gelu(float4 v) { return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f)); }

inline float4 gemm_act(float4 v, const int epi) {
  if (epi == 1) return gemm_gelu(v);
  if (epi == 2) {
    const float4 u = 0.79788456080286536f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanh(u));
  }
  if (epi == 3) return v / (1.0f + exp(-1.702f * v));
  if (epi == 4) return v / (1.0f + exp(-v));
  return v;
}

// bias[c0 .. c0 + 3], lanes from `valid` on read as 0.
inline float4 gemm_bias4(bias_PARAMS, const int c0, const int valid) {
  return (float4)(bias_LOAD(0, c0, 0), valid > 1 ? bias_LOAD(0, c0 + 1, 0) : 0.0f,
                  valid > 2 ? bias_LOAD(0, c0 + 2, 0) : 0.0f, valid > 3 ? bias_LOAD(0, c0 + 3, 0) : 0.0f);
}

// Output slice s (channels 4s .. 4s+3) of position t: h holds the products of those
// channels (the hidden rows under GEGLU), g those of the gate rows.
inline void gemm_epilogue(bias_PARAMS, residual_PARAMS, y_PARAMS, const int b, const int s, const int t,
                          float4 h, float4 g, const int epi, const int hasBias, const int hasResidual) {
  const int F = y_C, c = 4 * s, valid = min(4, F - c);
  if (hasBias) {
    h += gemm_bias4(bias_ARGS, c, valid);
#if GEGLU
    g += gemm_bias4(bias_ARGS, F + c, valid);
#endif
  }
#if GEGLU
  float4 out = h * gemm_gelu(g);
#else
  float4 out = gemm_act(h, epi);
#endif
  if (hasResidual) out += residual_LOAD4(b, s, t);
  y_STORE4(b, s, t, out);
}

// Weights w[row, k .. k+3] as a float4, lanes past K read 0. Parameters are NCHW
// buffers in the weight format (family.h). With K % 4 == 0 a row's slice is 4
// consecutive elements: f32 reads it as one aligned float4 (the pre-f16-weights code,
// kept so f32 programs compute what they did), f16 as one vload_half4 (2-byte aligned).
// Quantized weights (int8 = q8_0, int4 = q4_0): every caller passes k % 4 == 0, so the 4
// values lie in one block (32 per block), and past K they are the row's zero padding
// (kernels/QUANTIZATION.md): no bounds test. Dequantized in registers; d * q is exact.
inline float4 gemm_w4(w_PARAMS, const int row, const int k, const int K) {
#if w_IS_Q8 || w_IS_Q4
  __global const uchar* blk = w_BLOCK(row, k);
  const float d = vload_half(0, (__global const half*)blk);
  const int j = k & 31;
#if w_IS_Q8
  return d * convert_float4(vload4(0, (__global const char*)blk + 2 + j));
#else
  const uchar4 b = vload4(0, blk + 2 + (j & 15));
  const int4 q = convert_int4(j < 16 ? (b & (uchar4)(15)) : (b >> (uchar4)(4))) - 8;
  return d * convert_float4(q);
#endif
#elif w_IS_F16
  if ((K & 3) == 0) return vload_half4(0, w_data + w_IDX(row, k, 0));
#else
  if ((K & 3) == 0) return ((__global const float4*)w_data)[(w_IDX(row, k, 0)) >> 2];
#endif
#if !(w_IS_Q8 || w_IS_Q4)
  return (float4)(w_LOAD(row, k, 0), k + 1 < K ? w_LOAD(row, k + 1, 0) : 0.0f,
                  k + 2 < K ? w_LOAD(row, k + 2, 0) : 0.0f, k + 3 < K ? w_LOAD(row, k + 3, 0) : 0.0f);
#endif
}

// The 4 output channels' products of K-slice ks: w rows `rows` (+ `base`), in f32 (gemv).
inline float4 gemm_slice(w_PARAMS, const float4 xv, const int* rows, const int base, const int ks, const int K) {
  float4 w[4];
  for (int l = 0; l < 4; ++l) w[l] = gemm_w4(w_ARGS, base + rows[l], 4 * ks, K);
  return xv.x * (float4)(w[0].x, w[1].x, w[2].x, w[3].x) + xv.y * (float4)(w[0].y, w[1].y, w[2].y, w[3].y) +
         xv.z * (float4)(w[0].z, w[1].z, w[2].z, w[3].z) + xv.w * (float4)(w[0].w, w[1].w, w[2].w, w[3].w);
}

#ifdef SD_HALF
// The half twins' epilogue (direct_f16, tiled_f16): bias, activation and residual in
// half on the f32 sum rounded once.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

inline half4 gemm_gelu_h(half4 v) { return 0.5h * v * (1.0h + erf(v * 0.70710678h)); }

inline half4 gemm_act_h(half4 v, const int epi) {
  if (epi == 1) return gemm_gelu_h(v);
  if (epi == 2) {
    const half4 u = 0.79788456h * (v + 0.044715h * v * v * v);
    return 0.5h * v * (1.0h + tanh(u));
  }
  if (epi == 3) return v / (1.0h + exp(-1.702h * v));
  if (epi == 4) return v / (1.0h + exp(-v));
  return v;
}

inline void gemm_epilogue_h(bias_PARAMS, residual_PARAMS, y_PARAMS, const int b, const int s, const int t,
                            half4 h, half4 g, const int epi, const int hasBias, const int hasResidual) {
  const int F = y_C, c = 4 * s, valid = min(4, F - c);
  if (hasBias) {
    h += convert_half4(gemm_bias4(bias_ARGS, c, valid));
#if GEGLU
    g += convert_half4(gemm_bias4(bias_ARGS, F + c, valid));
#endif
  }
#if GEGLU
  half4 out = h * gemm_gelu_h(g);
#else
  half4 out = gemm_act_h(h, epi);
#endif
  if (hasResidual) out += convert_half4(residual_LOAD4(b, s, t));
  y_STORE4(b, s, t, convert_float4(out));
}

// The 4 output channels' products of K-slice ks added to acc in half (direct_f16, gemv_f16): w rows `rows` (+ `base`).
inline half4 gemm_slice_h(w_PARAMS, const half4 xv, const int* rows, const int base, const int ks, const int K,
                          half4 acc) {
  half4 w[4];
  for (int l = 0; l < 4; ++l) w[l] = convert_half4(gemm_w4(w_ARGS, base + rows[l], 4 * ks, K));
  acc = fma((half4)(xv.x), (half4)(w[0].x, w[1].x, w[2].x, w[3].x), acc);
  acc = fma((half4)(xv.y), (half4)(w[0].y, w[1].y, w[2].y, w[3].y), acc);
  acc = fma((half4)(xv.z), (half4)(w[0].z, w[1].z, w[2].z, w[3].z), acc);
  return fma((half4)(xv.w), (half4)(w[0].w, w[1].w, w[2].w, w[3].w), acc);
}

#endif  // SD_HALF

#ifdef TILED
#define MDIMC (MWG / MWI)  // work-items along positions
#define NDIMC (NWG / NWI)  // work-items along output channels
#define WGS (MDIMC * NDIMC)
#define NQ (NWG / 4)  // 4-wide columns of one w tile half
// The tiles' and products' type: float, or half in tiled_f16 (SD_HALF). tiled_f16 stages
// x and w in local memory as half (rounded once, when stored) and sums the products of
// one KWG step (KWG products per output, direct_f16's HK = KWG / 4 <= 8) in half, each
// step's sum joining an f32 accumulator: direct_f16's scheme (below), so the error is
// ~u of the output at every K rather than u sqrt(K).
#ifdef SD_HALF
#define realT half
#define real4 half4
#define realV SD_HALFN(VEC)
#else
#define realT float
#define real4 float4
#define realV SD_FLOATN(VEC)
#endif

// Element l of a floatV into dst[i + l].
#if VEC == 1
#define GEMM_SPREAD(dst, i, v) dst[i] = (v)
#else
#define GEMM_SPREAD(dst, i, v) \
  do {                         \
    const real4 sp_ = (v);     \
    dst[(i) + 0] = sp_.x;      \
    dst[(i) + 1] = sp_.y;      \
    dst[(i) + 2] = sp_.z;      \
    dst[(i) + 3] = sp_.w;      \
  } while (0)
#endif

#define LA (MWG * (KWG / 4) / WGS)          // x float4 per work-item and step (constraint: >= 1)
#define LB (PAIRS * NWG * (KWG / 4) / WGS)  // w float4 per work-item and step (SB)

#if SB
#define GEMM_LOAD_W(k0)                                                                       \
  for (int r = 0; r < LB; ++r) {                                            \
    const int e = lid + r * WGS, c = e % (PAIRS * NWG), k = (k0) + 4 * (e / (PAIRS * NWG));   \
    const int p = c / NWG, o = n0 + c % NWG;                                                  \
    wr[r] = (o < F && k < K) ? gemm_w4(w_ARGS, p * F + o, k, K) : (float4)(0.0f);             \
  }
#define GEMM_STORE_W()                                                                        \
  for (int r = 0; r < LB; ++r) {                                            \
    const int e = lid + r * WGS, c = e % (PAIRS * NWG), q = e / (PAIRS * NWG);                \
    __local realT* bs = (__local realT*)Bs;                                                   \
    bs[(4 * q + 0) * (PAIRS * NWG) + c] = wr[r].x;                                            \
    bs[(4 * q + 1) * (PAIRS * NWG) + c] = wr[r].y;                                            \
    bs[(4 * q + 2) * (PAIRS * NWG) + c] = wr[r].z;                                            \
    bs[(4 * q + 3) * (PAIRS * NWG) + c] = wr[r].w;                                            \
  }
#else
#define GEMM_LOAD_W(k0)
#define GEMM_STORE_W()
#endif

// Global -> registers (xr, wr) for the step at k0, registers -> local memory.
#define GEMM_LOAD_GLOBAL(k0)                                                                  \
  {                                                                                           \
    for (int r = 0; r < LA; ++r) {                                          \
      const int e = lid + r * WGS, m = e % MWG, t = m0 + m, ks = (k0) / 4 + e / MWG;          \
      xr[r] = (t < T && ks < x_SLICES) ? x_LOAD4(b, ks, t) : (float4)(0.0f);                  \
    }                                                                                         \
    GEMM_LOAD_W(k0)                                                                           \
  }
#define GEMM_STORE_LOCAL()                                                                    \
  {                                                                                           \
    for (int r = 0; r < LA; ++r) {                                          \
      const int e = lid + r * WGS, m = e % MWG, q = e / MWG;                                  \
      __local realT* as = (__local realT*)As;                                                 \
      as[(4 * q + 0) * MWG + m] = xr[r].x;                                                    \
      as[(4 * q + 1) * MWG + m] = xr[r].y;                                                    \
      as[(4 * q + 2) * MWG + m] = xr[r].z;                                                    \
      as[(4 * q + 3) * MWG + m] = xr[r].w;                                                    \
    }                                                                                         \
    GEMM_STORE_W()                                                                            \
  }

// Grid (ceil(T / MWG) * MDIMC, ceil(F / NWG) * NDIMC, B), local (MDIMC, NDIMC, 1).
__kernel __attribute__((reqd_work_group_size(MDIMC, NDIMC, 1)))
void gemm_tiled(x_PARAMS, w_PARAMS, bias_PARAMS, residual_PARAMS, y_PARAMS, const int epi, const int hasBias,
                const int hasResidual) {
  __local realV As[KWG][MWG / VEC];  // x tile, k-major: row k holds the MWG positions
#if SB
  __local real4 Bs[KWG][PAIRS * NQ];  // w tile, k-major: hidden columns, then gate columns
#endif
  const int tm = get_local_id(0), tn = get_local_id(1), lid = tn * MDIMC + tm;
  const int b = get_group_id(2);
  const int T = x_HW, K = x_C, F = y_C;
  const int m0 = get_group_id(0) * MWG, n0 = get_group_id(1) * NWG;
  float acc[MWI][PAIRS * NWI];
#pragma unroll
  for (int i = 0; i < MWI; ++i)
#pragma unroll
    for (int j = 0; j < PAIRS * NWI; ++j) acc[i][j] = 0.0f;

  // x tile: KWG / 4 slices x MWG positions, LA float4 per work-item; neighbouring
  // work-items read neighbouring positions (contiguous in every layout) and write
  // neighbouring local words. w tile (SB): PAIRS * NWG rows x KWG / 4 float4 slices
  // of K, LB per work-item; rows past the output channels and slices past K read 0.
  float4 xr[LA];
#if SB
  float4 wr[LB];
#endif
#if PF
  GEMM_LOAD_GLOBAL(0)
#endif
  for (int k0 = 0; k0 < K; k0 += KWG) {
#if !PF
    GEMM_LOAD_GLOBAL(k0)
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    GEMM_STORE_LOCAL()
    barrier(CLK_LOCAL_MEM_FENCE);
#if PF
    // The next step's tiles: in flight while this step computes.
    if (k0 + KWG < K) GEMM_LOAD_GLOBAL(k0 + KWG)
#endif
#ifdef SD_HALF
    half hacc[MWI][PAIRS * NWI];  // this step's sums (the f32 acc takes them after it)
#pragma unroll
    for (int i = 0; i < MWI; ++i)
#pragma unroll
      for (int j = 0; j < PAIRS * NWI; ++j) hacc[i][j] = 0.0h;
#define GEMM_ACC hacc
#else
#define GEMM_ACC acc
#endif
#pragma unroll
    for (int k = 0; k < KWG; ++k) {
      realT a[MWI], bb[PAIRS * NWI];
#pragma unroll
      for (int iv = 0; iv < MWI / VEC; ++iv) GEMM_SPREAD(a, iv * VEC, As[k][iv * MDIMC + tm]);
#if SB
#pragma unroll
      for (int p = 0; p < PAIRS; ++p)
#pragma unroll
        for (int jv = 0; jv < NWI / 4; ++jv) {
          const real4 v = Bs[k][p * NQ + jv * NDIMC + tn];
          bb[p * NWI + jv * 4 + 0] = v.x;
          bb[p * NWI + jv * 4 + 1] = v.y;
          bb[p * NWI + jv * 4 + 2] = v.z;
          bb[p * NWI + jv * 4 + 3] = v.w;
        }
#else
      // Straight from global memory: past K or past F, a clamped index (x is 0 there,
      // or the output is not stored).
      const int kk = min(k0 + k, K - 1);
#pragma unroll
      for (int p = 0; p < PAIRS; ++p)
#pragma unroll
        for (int j = 0; j < NWI; ++j) {
          const int o = min(n0 + ((j / 4) * NDIMC + tn) * 4 + j % 4, F - 1);
          bb[p * NWI + j] = w_LOAD(p * F + o, kk, 0);
        }
#endif
#pragma unroll
      for (int i = 0; i < MWI; ++i)
#pragma unroll
        for (int j = 0; j < PAIRS * NWI; ++j) GEMM_ACC[i][j] = fma(a[i], bb[j], GEMM_ACC[i][j]);
    }
#ifdef SD_HALF
#pragma unroll
    for (int i = 0; i < MWI; ++i)
#pragma unroll
      for (int j = 0; j < PAIRS * NWI; ++j) acc[i][j] += (float)hacc[i][j];
#endif
#undef GEMM_ACC
  }

#pragma unroll
  for (int i = 0; i < MWI; ++i) {
    const int t = m0 + (i / VEC) * MDIMC * VEC + tm * VEC + i % VEC;
    if (t >= T) continue;
#pragma unroll
    for (int jv = 0; jv < NWI / 4; ++jv) {
      const int s = n0 / 4 + jv * NDIMC + tn;
      if (4 * s >= F) continue;
      const float4 h = (float4)(acc[i][jv * 4], acc[i][jv * 4 + 1], acc[i][jv * 4 + 2], acc[i][jv * 4 + 3]);
#if GEGLU
      const float4 g = (float4)(acc[i][NWI + jv * 4], acc[i][NWI + jv * 4 + 1], acc[i][NWI + jv * 4 + 2],
                                acc[i][NWI + jv * 4 + 3]);
#else
      const float4 g = (float4)(0.0f);
#endif
#ifdef SD_HALF
      gemm_epilogue_h(bias_ARGS, residual_ARGS, y_ARGS, b, s, t, convert_half4(h), convert_half4(g), epi, hasBias,
                      hasResidual);
#else
      gemm_epilogue(bias_ARGS, residual_ARGS, y_ARGS, b, s, t, h, g, epi, hasBias, hasResidual);
#endif
    }
  }
}
#endif  // TILED

#if defined(DIRECT) && !defined(SD_HALF)
// Grid (roundup(T, WG), ceil(F / 4), B), local (WG, 1, 1).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gemm_direct(x_PARAMS, w_PARAMS, bias_PARAMS, residual_PARAMS, y_PARAMS, const int epi, const int hasBias,
                 const int hasResidual) {
  const int t = get_global_id(0), s = get_global_id(1), b = get_global_id(2);
  const int T = x_HW, K = x_C, F = y_C;
  if (t >= T) return;
  int rows[4];
  for (int l = 0; l < 4; ++l) rows[l] = min(4 * s + l, F - 1);  // lanes past F: not stored
  float4 h = (float4)(0.0f), g = (float4)(0.0f);
  for (int ks = 0; ks < x_SLICES; ++ks) {
    const float4 xv = x_LOAD4(b, ks, t);  // lanes past K are 0
    float4 w[4];
    for (int l = 0; l < 4; ++l) w[l] = gemm_w4(w_ARGS, rows[l], 4 * ks, K);
    h += xv.x * (float4)(w[0].x, w[1].x, w[2].x, w[3].x) + xv.y * (float4)(w[0].y, w[1].y, w[2].y, w[3].y) +
         xv.z * (float4)(w[0].z, w[1].z, w[2].z, w[3].z) + xv.w * (float4)(w[0].w, w[1].w, w[2].w, w[3].w);
#if GEGLU
    for (int l = 0; l < 4; ++l) w[l] = gemm_w4(w_ARGS, F + rows[l], 4 * ks, K);
    g += xv.x * (float4)(w[0].x, w[1].x, w[2].x, w[3].x) + xv.y * (float4)(w[0].y, w[1].y, w[2].y, w[3].y) +
         xv.z * (float4)(w[0].z, w[1].z, w[2].z, w[3].z) + xv.w * (float4)(w[0].w, w[1].w, w[2].w, w[3].w);
#endif
  }
  gemm_epilogue(bias_ARGS, residual_ARGS, y_ARGS, b, s, t, h, g, epi, hasBias, hasResidual);
}
#endif  // DIRECT

#if defined(DIRECT) && defined(SD_HALF)
// direct_f16: gemm_direct computing in half (cl_khr_fp16), same kernel name, arguments
// and grid. The products x * w and their sums over a chunk of HK K-slices (4 * HK
// products per output) are half4 FMAs (two paired half2 FMAs each); each chunk's sum
// joins an f32 accumulator. Accumulating all of K in half would not do: at K = 5120
// (SD 1.5's largest) the running sum's rounding errors, u = 2^-11 per addition on a
// sum of O(1), add up like a random walk to ~u sqrt(K) = 3.5e-2 on outputs of O(1),
// and a sum of like-signed terms can pass half's 65504. A chunk's sum is ~sqrt(4 HK /
// K) of the output, so its rounding adds ~u of it, and the error stays ~u sqrt(K / 4
// HK) * sqrt(4 HK / K) ~ u at every K. The epilogue (bias, activation, residual) runs
// in half on the f32 sum rounded once.
// Grid (roundup(T, WG), ceil(F / 4), B), local (WG, 1, 1).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gemm_direct(x_PARAMS, w_PARAMS, bias_PARAMS, residual_PARAMS, y_PARAMS, const int epi, const int hasBias,
                 const int hasResidual) {
  const int t = get_global_id(0), s = get_global_id(1), b = get_global_id(2);
  const int T = x_HW, K = x_C, F = y_C;
  if (t >= T) return;
  int rows[4];
  for (int l = 0; l < 4; ++l) rows[l] = min(4 * s + l, F - 1);  // lanes past F: not stored
  float4 h = (float4)(0.0f), g = (float4)(0.0f);
  for (int k0 = 0; k0 < x_SLICES; k0 += HK) {
    half4 hh = (half4)(0.0h), hg = (half4)(0.0h);
    const int kend = min(k0 + HK, x_SLICES);
    for (int ks = k0; ks < kend; ++ks) {
      const half4 xv = convert_half4(x_LOAD4(b, ks, t));  // lanes past K are 0
      hh = gemm_slice_h(w_ARGS, xv, rows, 0, ks, K, hh);
#if GEGLU
      hg = gemm_slice_h(w_ARGS, xv, rows, F, ks, K, hg);
#endif
    }
    h += convert_float4(hh);
    g += convert_float4(hg);
  }
  gemm_epilogue_h(bias_ARGS, residual_ARGS, y_ARGS, b, s, t, convert_half4(h), convert_half4(g), epi, hasBias,
                  hasResidual);
}
#endif  // DIRECT && SD_HALF

#ifdef GEMV
// GEMV: gemm_gemv (gemv, gemv_f16), for a few positions (B*H*W <= 8, the family's rule:
// the time embedding's Linears, where M = B = 2). gemm_direct's work-item
// per (position, 4 output channels) walks all of K alone; at M = 2 only ~F/4 work-items
// exist, each waiting on ~K/4 dependent loads (an H100: 80 to 166 us at 2x1280x1x1, for
// 3.3 MB of f16 weights). Here a work-group of WG work-items shares each such dot product:
// work-item i takes K-slices i, i + WG, ... (neighbours read neighbouring 4-weight slices
// of each weight row, 16 bytes in f32, 8 in f16: coalesced), and the partial sums meet in local memory (a tree, WG a
// power of two). One work-group per (4 output channels, position, sample).
// gemv_f16 (SD_HALF): each slice's 4 products summed in half, those sums in f32
// (direct_f16's scheme with HK = 1); the epilogue in half.
// Grid (WG * ceil(F / 4), T, B), local (WG, 1, 1).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gemm_gemv(x_PARAMS, w_PARAMS, bias_PARAMS, residual_PARAMS, y_PARAMS, const int epi, const int hasBias,
               const int hasResidual) {
  const int i = get_local_id(0), s = get_group_id(0), t = get_global_id(1), b = get_global_id(2);
  const int K = x_C, F = y_C;
  int rows[4];
  for (int l = 0; l < 4; ++l) rows[l] = min(4 * s + l, F - 1);  // lanes past F: not stored
  float4 h = (float4)(0.0f), g = (float4)(0.0f);
  for (int ks = i; ks < x_SLICES; ks += WG) {
    const float4 xv = x_LOAD4(b, ks, t);  // lanes past K are 0
#ifdef SD_HALF
    h += convert_float4(gemm_slice_h(w_ARGS, convert_half4(xv), rows, 0, ks, K, (half4)(0.0h)));
#if GEGLU
    g += convert_float4(gemm_slice_h(w_ARGS, convert_half4(xv), rows, F, ks, K, (half4)(0.0h)));
#endif
#else
    h += gemm_slice(w_ARGS, xv, rows, 0, ks, K);
#if GEGLU
    g += gemm_slice(w_ARGS, xv, rows, F, ks, K);
#endif
#endif
  }
  __local float4 red[WG * PAIRS];
  red[i] = h;
#if GEGLU
  red[WG + i] = g;
#endif
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int n = WG / 2; n > 0; n >>= 1) {
    if (i < n) {
      red[i] += red[i + n];
#if GEGLU
      red[WG + i] += red[WG + i + n];
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (i != 0) return;
#if GEGLU
  g = red[WG];
#endif
#ifdef SD_HALF
  gemm_epilogue_h(bias_ARGS, residual_ARGS, y_ARGS, b, s, t, convert_half4(red[0]), convert_half4(g), epi, hasBias,
                  hasResidual);
#else
  gemm_epilogue(bias_ARGS, residual_ARGS, y_ARGS, b, s, t, red[0], g, epi, hasBias, hasResidual);
#endif
}
#endif  // GEMV
