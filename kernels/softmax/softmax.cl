// Softmax over the channels of token tensors: y[n, :, t] = softmax(scale * x[n, :, t]),
// the attention scores' normalization when a score row is stored as a token's
// channels. x (read), y (write); every storage format through LOAD4/STORE4. The row
// maximum is subtracted before exp, so large logits (tests add +100) cannot overflow.
// Parameters: WG (work-group size, a power of two); per_item: a work-item per token;
// cooperative: a work-group per token, combining (max, sum) pairs (online softmax);
// split (TX, PARTS): TX tokens per work-group, each token's slices dealt over PARTS
// work-items, their pairs combined in part order (kernels/common/token_row_family.cpp).

// Slice s of token (n, hw), scaled, with the padding lanes (channels >= C) at -inf.
#define SM_SLICE(n, s, hw, scale) sm_mask(x_LOAD4(n, s, hw) * (scale), s, x_C)
inline float4 sm_mask(float4 v, int s, int C) {
  const int k = C - 4 * s;
  return (float4)(v.x, k > 1 ? v.y : -INFINITY, k > 2 ? v.z : -INFINITY, k > 3 ? v.w : -INFINITY);
}
inline float sm_max4(float4 v) { return fmax(fmax(v.x, v.y), fmax(v.z, v.w)); }

#ifdef PER_ITEM
// Grid (roundup(HW, WG), N).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sm_per_item(x_PARAMS, y_PARAMS, const float scale) {
  const int hw = get_global_id(0), n = get_global_id(1);
  if (hw >= x_HW) return;
  float m = -INFINITY;
  for (int s = 0; s < x_SLICES; ++s) m = fmax(m, sm_max4(SM_SLICE(n, s, hw, scale)));
  float sum = 0.0f;
  for (int s = 0; s < x_SLICES; ++s) sum += sd_hsum4(exp(SM_SLICE(n, s, hw, scale) - m));
  const float inv = 1.0f / sum;
  for (int s = 0; s < x_SLICES; ++s) y_STORE4(n, s, hw, exp(SM_SLICE(n, s, hw, scale) - m) * inv);
}
#endif

#if defined(COOPERATIVE) || defined(TOKEN_SPLIT)
// (max, sum of exp(x - max)) of two parts, as one.
inline float2 sm_combine(float2 a, float2 b) {
  const float m = fmax(a.x, b.x);
  if (m == -INFINITY) return (float2)(m, 0.0f);
  return (float2)(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}
#endif

#ifdef COOPERATIVE
// Grid (WG * N * HW): work-group r handles token r % HW of sample r / HW.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sm_cooperative(x_PARAMS, y_PARAMS, const float scale) {
  __local float2 red[WG];
  const int row = get_group_id(0), lid = get_local_id(0);
  const int n = row / x_HW, hw = row % x_HW;
  float2 acc = (float2)(-INFINITY, 0.0f);
  for (int s = lid; s < x_SLICES; s += WG) {
    const float4 v = SM_SLICE(n, s, hw, scale);
    const float m = sm_max4(v);
    acc = sm_combine(acc, (float2)(m, sd_hsum4(exp(v - m))));
  }
  red[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int off = WG / 2; off > 0; off >>= 1) {
    if (lid < off) red[lid] = sm_combine(red[lid], red[lid + off]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float2 t = red[0];
  const float inv = 1.0f / t.y;
  for (int s = lid; s < x_SLICES; s += WG) y_STORE4(n, s, hw, exp(SM_SLICE(n, s, hw, scale) - t.x) * inv);
}
#endif

#if defined(COOPERATIVE) && defined(SD_HALF)
// cooperative_f16: sm_cooperative with the exponentials and the normalization in half
// (cl_khr_fp16). Still f32:
//   - the scaled logits and their shift v - max: at logits near 100 half's spacing is
//     0.0625, which would move exp by up to 3%; v - max is formed in f32 and rounded to
//     half once, so exp's argument is off by at most u |v - max| (u = 2^-11), and
//     outputs that matter have |v - max| of a few units;
//   - the row's (max, sum) pairs and their combination across the work-group: a sum of
//     up to 4096 exponentials (SD's score rows) would keep 11 bits in half.
// In half: exp of the shifted logits (half4) and the final multiply by 1 / sum (in
// [1/C, 1], a normal half for C <= 4096).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
// Grid (WG * N * HW): work-group r handles token r % HW of sample r / HW.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sm_cooperative_f16(x_PARAMS, y_PARAMS, const float scale) {
  __local float2 red[WG];
  const int row = get_group_id(0), lid = get_local_id(0);
  const int n = row / x_HW, hw = row % x_HW;
  float2 acc = (float2)(-INFINITY, 0.0f);
  for (int s = lid; s < x_SLICES; s += WG) {
    const float4 v = SM_SLICE(n, s, hw, scale);
    const float m = sm_max4(v);
    acc = sm_combine(acc, (float2)(m, sd_hsum4(convert_float4(exp(convert_half4(v - m))))));
  }
  red[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int off = WG / 2; off > 0; off >>= 1) {
    if (lid < off) red[lid] = sm_combine(red[lid], red[lid + off]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float2 t = red[0];
  const half inv = (half)(1.0f / t.y);
  for (int s = lid; s < x_SLICES; s += WG)
    y_STORE4(n, s, hw, convert_float4(exp(convert_half4(SM_SLICE(n, s, hw, scale) - t.x)) * inv));
}
#endif  // SD_HALF

#ifdef TOKEN_SPLIT
// Token (n, hw)'s (max, sum) pair: each part's over slices part, part + PARTS, .. (EXPF
// its exponential), then the PARTS pairs combined in part order through red, every part
// reading the total. Spare lanes past HW walk the last token (no store), so every
// work-item reaches the barrier.
#define SM_SPLIT_PAIR(red, EXPF)                                                    \
  const int tx = get_local_id(0), part = get_local_id(1), n = get_global_id(2);    \
  const int hw = get_global_id(0), t = min(hw, x_HW - 1);                           \
  float2 acc = (float2)(-INFINITY, 0.0f);                                           \
  for (int s = part; s < x_SLICES; s += PARTS) {                                    \
    const float4 v = SM_SLICE(n, s, t, scale);                                      \
    const float m = sm_max4(v);                                                     \
    acc = sm_combine(acc, (float2)(m, sd_hsum4(EXPF(v - m))));                      \
  }                                                                                 \
  red[part][tx] = acc;                                                              \
  barrier(CLK_LOCAL_MEM_FENCE);                                                     \
  float2 tot = red[0][tx];                                                          \
  for (int k = 1; k < PARTS; ++k) tot = sm_combine(tot, red[k][tx])
#define SM_EXP_F32(v) exp(v)

// Grid (roundup(HW, TX), PARTS, N), work-groups (TX, PARTS, 1).
__kernel __attribute__((reqd_work_group_size(TX, PARTS, 1)))
void sm_split(x_PARAMS, y_PARAMS, const float scale) {
  __local float2 red[PARTS][TX];
  SM_SPLIT_PAIR(red, SM_EXP_F32);
  const float inv = 1.0f / tot.y;
  if (hw >= x_HW) return;
  for (int s = part; s < x_SLICES; s += PARTS) y_STORE4(n, s, hw, exp(SM_SLICE(n, s, hw, scale) - tot.x) * inv);
}
#endif

#if defined(TOKEN_SPLIT) && defined(SD_HALF)
// split_f16: sm_split with the exponentials and the normalization in half, as
// cooperative_f16 (what stays f32, and why, is said there).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#define SM_EXP_F16(v) convert_float4(exp(convert_half4(v)))
// Grid (roundup(HW, TX), PARTS, N), work-groups (TX, PARTS, 1).
__kernel __attribute__((reqd_work_group_size(TX, PARTS, 1)))
void sm_split_f16(x_PARAMS, y_PARAMS, const float scale) {
  __local float2 red[PARTS][TX];
  SM_SPLIT_PAIR(red, SM_EXP_F16);
  const half inv = (half)(1.0f / tot.y);
  if (hw >= x_HW) return;
  for (int s = part; s < x_SLICES; s += PARTS)
    y_STORE4(n, s, hw, convert_float4(exp(convert_half4(SM_SLICE(n, s, hw, scale) - tot.x)) * inv));
}
#endif  // TOKEN_SPLIT && SD_HALF
