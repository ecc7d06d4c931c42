// LayerNorm over the channels of token tensors (the transformer blocks and CLIP):
//   y[n, :, t] = (x[n, :, t] - mean) * rstd * gamma + beta, mean/var over the C channels
// A token tensor [B, S, C] is the logical NCHW tensor N=B, C, H=1, W=S (hw = token).
// Tensors x (read), gamma, beta (read, weight-format buffers), y (write). Both variants walk the
// channels one slice (4 channels) at a time through LOAD4/STORE4, so they serve every
// storage format, images included. Variance: shifted sums with K = the token's first
// channel, applied as (x - K) - m (see groupnorm.cl).
// Parameters: WG (work-group size); per_item: one work-item per token; cooperative:
// one work-group per token with a local-memory reduction (for few tokens, many channels);
// split (TX, PARTS): TX tokens per work-group, each token's slices dealt over PARTS
// work-items (kernels/common/token_row_family.cpp says why).

// 1 for the lanes of slice s that hold channels (< C), 0 for padding lanes.
inline float4 ln_valid(int s, int C) {
  const int n = C - 4 * s;
  return (float4)(1.0f, n > 1 ? 1.0f : 0.0f, n > 2 ? 1.0f : 0.0f, n > 3 ? 1.0f : 0.0f);
}

// gamma/beta channels 4s..4s+3 (clamped to C - 1; padding lanes are masked on store),
// through the accessors, so f16 weights read as halves.
#define ln_param4(P, s, C)                                                                  \
  ((float4)(P##_LOAD(0, 4 * (s), 0), P##_LOAD(0, min(4 * (s) + 1, (C) - 1), 0),            \
            P##_LOAD(0, min(4 * (s) + 2, (C) - 1), 0), P##_LOAD(0, min(4 * (s) + 3, (C) - 1), 0)))

#ifdef PER_ITEM
// Grid (roundup(HW, WG), N).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ln_per_item(x_PARAMS, gamma_PARAMS, beta_PARAMS, y_PARAMS, const float eps) {
  const int hw = get_global_id(0), n = get_global_id(1);
  if (hw >= x_HW) return;
  const float K = x_LOAD(n, 0, hw);
  float4 s1 = (float4)(0.0f), s2 = (float4)(0.0f);
  for (int s = 0; s < x_SLICES; ++s) {
    const float4 d = (x_LOAD4(n, s, hw) - K) * ln_valid(s, x_C);
    s1 += d;
    s2 += d * d;
  }
  const float m = sd_hsum4(s1) / x_C;
  const float rstd = rsqrt(max(sd_hsum4(s2) / x_C - m * m, 0.0f) + eps);
  for (int s = 0; s < x_SLICES; ++s) {
    const float4 v = ((x_LOAD4(n, s, hw) - K) - m) * rstd;
    y_STORE4(n, s, hw, v * ln_param4(gamma, s, x_C) + ln_param4(beta, s, x_C));
  }
}
#endif

#ifdef COOPERATIVE
// Grid (WG * N * HW): work-group r normalizes token r % HW of sample r / HW.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ln_cooperative(x_PARAMS, gamma_PARAMS, beta_PARAMS, y_PARAMS, const float eps) {
  __local float2 red[WG];
  const int row = get_group_id(0), lid = get_local_id(0);
  const int n = row / x_HW, hw = row % x_HW;
  const float K = x_LOAD(n, 0, hw);
  float4 s1 = (float4)(0.0f), s2 = (float4)(0.0f);
  for (int s = lid; s < x_SLICES; s += WG) {
    const float4 d = (x_LOAD4(n, s, hw) - K) * ln_valid(s, x_C);
    s1 += d;
    s2 += d * d;
  }
  const float2 t = sd_reduce2((float2)(sd_hsum4(s1), sd_hsum4(s2)), red, WG);
  const float m = t.x / x_C;
  const float rstd = rsqrt(max(t.y / x_C - m * m, 0.0f) + eps);
  for (int s = lid; s < x_SLICES; s += WG) {
    const float4 v = ((x_LOAD4(n, s, hw) - K) - m) * rstd;
    y_STORE4(n, s, hw, v * ln_param4(gamma, s, x_C) + ln_param4(beta, s, x_C));
  }
}
#endif

#ifdef TOKEN_SPLIT
// Shifted sums (s1, s2) of token (n, hw)'s slices part, part + PARTS, ..; then the
// PARTS partial sums of each token added in part order through red, every part reading
// the total. Spare lanes past HW walk the last token (no store), so every work-item
// reaches both barriers.
#define LN_SPLIT_STATS(red)                                                         \
  const int tx = get_local_id(0), part = get_local_id(1), n = get_global_id(2);    \
  const int hw = get_global_id(0), t = min(hw, x_HW - 1);                           \
  const float K = x_LOAD(n, 0, t);                                                  \
  float4 s1 = (float4)(0.0f), s2 = (float4)(0.0f);                                  \
  for (int s = part; s < x_SLICES; s += PARTS) {                                    \
    const float4 d = (x_LOAD4(n, s, t) - K) * ln_valid(s, x_C);                     \
    s1 += d;                                                                        \
    s2 += d * d;                                                                    \
  }                                                                                 \
  red[part][tx] = (float2)(sd_hsum4(s1), sd_hsum4(s2));                             \
  barrier(CLK_LOCAL_MEM_FENCE);                                                     \
  float2 tot = (float2)(0.0f);                                                      \
  for (int k = 0; k < PARTS; ++k) tot += red[k][tx];                                \
  const float m = tot.x / x_C;                                                      \
  const float var = max(tot.y / x_C - m * m, 0.0f)

// Grid (roundup(HW, TX), PARTS, N), work-groups (TX, PARTS, 1).
__kernel __attribute__((reqd_work_group_size(TX, PARTS, 1)))
void ln_split(x_PARAMS, gamma_PARAMS, beta_PARAMS, y_PARAMS, const float eps) {
  __local float2 red[PARTS][TX];
  LN_SPLIT_STATS(red);
  const float rstd = rsqrt(var + eps);
  if (hw >= x_HW) return;
  for (int s = part; s < x_SLICES; s += PARTS) {
    const float4 v = ((x_LOAD4(n, s, hw) - K) - m) * rstd;
    y_STORE4(n, s, hw, v * ln_param4(gamma, s, x_C) + ln_param4(beta, s, x_C));
  }
}
#endif

#if defined(COOPERATIVE) && defined(SD_HALF)
// cooperative_f16: ln_cooperative computing the normalization in half (cl_khr_fp16).
// Still f32: the statistics. The sums of x - K and (x - K)^2 run over C channels (768
// to 1280 in SD; half would keep only 11 bits of a sum of 1280 terms and drop terms
// once the sum passes 2048 of them) and through the work-group's tree (sd_reduce2),
// and x - K is formed in f32 (a token mean near 1000 leaves half a spacing of 0.5).
// In half, per element: (x - K - mean) * rstd * gamma + beta on half4 (paired half2).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
// Grid (WG * N * HW): work-group r normalizes token r % HW of sample r / HW.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void ln_cooperative_f16(x_PARAMS, gamma_PARAMS, beta_PARAMS, y_PARAMS, const float eps) {
  __local float2 red[WG];
  const int row = get_group_id(0), lid = get_local_id(0);
  const int n = row / x_HW, hw = row % x_HW;
  const float K = x_LOAD(n, 0, hw);
  float4 s1 = (float4)(0.0f), s2 = (float4)(0.0f);
  for (int s = lid; s < x_SLICES; s += WG) {
    const float4 d = (x_LOAD4(n, s, hw) - K) * ln_valid(s, x_C);
    s1 += d;
    s2 += d * d;
  }
  const float2 t = sd_reduce2((float2)(sd_hsum4(s1), sd_hsum4(s2)), red, WG);
  const float m = t.x / x_C;
  const half hm = (half)m, hrstd = (half)rsqrt(max(t.y / x_C - m * m, 0.0f) + eps);
  for (int s = lid; s < x_SLICES; s += WG) {
    const half4 v = (convert_half4(x_LOAD4(n, s, hw) - K) - hm) * hrstd;
    const half4 out = fma(v, convert_half4(ln_param4(gamma, s, x_C)), convert_half4(ln_param4(beta, s, x_C)));
    y_STORE4(n, s, hw, convert_float4(out));
  }
}
#endif  // SD_HALF

#if defined(TOKEN_SPLIT) && defined(SD_HALF)
// split_f16: ln_split with the per-element normalization in half, as cooperative_f16
// (the sums and x - K stay f32, for the reasons given there).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
// Grid (roundup(HW, TX), PARTS, N), work-groups (TX, PARTS, 1).
__kernel __attribute__((reqd_work_group_size(TX, PARTS, 1)))
void ln_split_f16(x_PARAMS, gamma_PARAMS, beta_PARAMS, y_PARAMS, const float eps) {
  __local float2 red[PARTS][TX];
  LN_SPLIT_STATS(red);
  const half hm = (half)m, hrstd = (half)rsqrt(var + eps);
  if (hw >= x_HW) return;
  for (int s = part; s < x_SLICES; s += PARTS) {
    const half4 v = (convert_half4(x_LOAD4(n, s, hw) - K) - hm) * hrstd;
    const half4 out = fma(v, convert_half4(ln_param4(gamma, s, x_C)), convert_half4(ln_param4(beta, s, x_C)));
    y_STORE4(n, s, hw, convert_float4(out));
  }
}
#endif  // TOKEN_SPLIT && SD_HALF
