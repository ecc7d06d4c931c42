// 2-D convolution y = conv(x, weight) + bias + temb + residual (kernels/conv/README.md).
// Slots: x [N, Cin, H, W] (activation), weight [Cout, Cin, K, K] and bias [Cout] (f32
// parameters; weight_LOAD(co, ci, ky * K + kx)), temb [N, Cout, 1, 1] and residual
// [N, Cout, Ho, Wo] (activations; one-element placeholders when unused), y [N, Cout,
// Ho, Wo]. Every output is written as a float4 slice of 4 channels (y_STORE4), so
// every storage format works, images included. Shapes, K, stride, pad and the
// epilogue flags are kernel arguments: one program per (variant, point, format).
//
// Variants (selected by #define):
//   DIRECT    conv_direct: each work-item computes CO output channels x PX output
//             pixels of one row; the work-group's weights for CB input slices are
//             staged in local memory (channel blocking).
//   IM2COL    conv_pack_weights (weights -> Wt [Cin*K*K][CoutP], once per weight
//             buffer), conv_im2col (x -> col [N][Cin*K*K][PP]), conv_gemm.
//   CONV1X1   conv_pack_weights, conv_gemm reading B straight from x (1x1, stride 1).
//   WINO      F(WM x WM, 3 x 3), ALPHA = WM + 2: conv_wino_weights (U = G g G^T ->
//             U [ALPHA^2][Cin][CoutP], once per weight buffer), conv_wino_input
//             (V = B^T d B -> V [ALPHA^2][Cin][TP]), conv_gemm batched over the
//             ALPHA^2 planes (M = U^T V -> M [ALPHA^2][CoutP][TP]), conv_wino_output
//             (Y = A^T M A + epilogue).
// CoutP = Cout rounded up to 4; PP, TP = output positions / tiles rounded up to 4
// (whole float4 rows in the scratch buffers, padding written as zero).
// Derived weights made per call (--derived-weights per-call) are made per block of NB
// output channels [co0, co0 + NB) (Wt [Cin*K*K][NB], U [ALPHA^2][Cin][NB]), each block's
// conv_gemm run right after its transform into the same scratch region (the in-order
// queue orders them); resident ones are one block, co0 = 0, NB = CoutP. Per call, WINO
// also runs per block of T tiles from t0 (V [ALPHA^2][Cin][TP], M [ALPHA^2][NB][TP], TP
// = T rounded up to 4). Every output element sees the same arithmetic either way
// (conv_family.cpp, ConvScratch).
//
// conv_gemm is the convolution's own small GEMM; it may later be swapped for the GEMM
// family's kernel (kernels/gemm/) once that exists.

#define CONV_BIAS 1
#define CONV_TEMB 2
#define CONV_RESIDUAL 4

// The fused epilogue on output slice s (channels 4s..4s+3) at (n, hw).
#define CONV_EPILOGUE(v, n, s, hw)                          \
  do {                                                      \
    if (flags & CONV_BIAS) v += bias_LOAD4(0, s, 0);        \
    if (flags & CONV_TEMB) v += temb_LOAD4(n, s, 0);        \
    if (flags & CONV_RESIDUAL) v += residual_LOAD4(n, s, hw); \
  } while (0)

#ifdef DIRECT
#define CO4 (CO / 4)
// Grid (roundUp(ceil(Wo / PX), WGX), roundUp(Ho, WGY), N * ceil(Cout / CO)), local
// (WGX, WGY, 1). K <= 3 (9 taps).
__kernel __attribute__((reqd_work_group_size(WGX, WGY, 1)))
void conv_direct(x_PARAMS, weight_PARAMS, bias_PARAMS, temb_PARAMS, residual_PARAMS, y_PARAMS, const int H,
                 const int W, const int Wo, const int K, const int stride, const int pad, const int flags) {
  __local float4 Ws[CB * 4][9][CO4];  // [input channel][tap][output slice]
  const int lid = get_local_id(1) * WGX + get_local_id(0);
  const int ox0 = get_global_id(0) * PX, oy = get_global_id(1);
  const int Cin = x_C, Cout = y_C, KK = K * K, Ho = y_HW / Wo;
  const int coBlocks = (Cout + CO - 1) / CO;
  const int n = get_global_id(2) / coBlocks, co0 = (get_global_id(2) % coBlocks) * CO;
  float4 acc[CO4][PX];
  for (int o = 0; o < CO4; ++o)
    for (int p = 0; p < PX; ++p) acc[o][p] = (float4)(0.0f);
  for (int c0 = 0; c0 < Cin; c0 += 4 * CB) {
    barrier(CLK_LOCAL_MEM_FENCE);
    // Neighbouring work-items read neighbouring (channel, tap) of one output channel.
    for (int e = lid; e < CO * CB * 4 * KK; e += WGX * WGY) {
      const int o = e / (CB * 4 * KK), r = e % (CB * 4 * KK), ci = r / KK, t = r % KK;
      const int co = co0 + o, c = c0 + ci;
      ((__local float*)Ws)[(ci * 9 + t) * CO + o] = (co < Cout && c < Cin) ? weight_LOAD(co, c, t) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int sEnd = min(CB, (Cin - c0 + 3) / 4);
    for (int cs = 0; cs < sEnd; ++cs) {
      const int s = c0 / 4 + cs;
      for (int ky = 0; ky < K; ++ky) {
        const int iy = oy * stride - pad + ky;
        const bool rowIn = iy >= 0 && iy < H;
        for (int kx = 0; kx < K; ++kx) {
          const int t = ky * K + kx;
          float4 xv[PX];
          for (int p = 0; p < PX; ++p) {
            const int ix = (ox0 + p) * stride - pad + kx;
            xv[p] = (rowIn && ix >= 0 && ix < W) ? x_LOAD4(n, s, iy * W + ix) : (float4)(0.0f);
          }
          for (int o = 0; o < CO4; ++o) {
            const float4 w0 = Ws[cs * 4][t][o], w1 = Ws[cs * 4 + 1][t][o];
            const float4 w2 = Ws[cs * 4 + 2][t][o], w3 = Ws[cs * 4 + 3][t][o];
            for (int p = 0; p < PX; ++p) {
              float4 a = fma((float4)(xv[p].x), w0, acc[o][p]);
              a = fma((float4)(xv[p].y), w1, a);
              a = fma((float4)(xv[p].z), w2, a);
              acc[o][p] = fma((float4)(xv[p].w), w3, a);
            }
          }
        }
      }
    }
  }
  if (oy >= Ho) return;
  for (int o = 0; o < CO4; ++o) {
    const int s = co0 / 4 + o;
    if (4 * s >= Cout) break;
    for (int p = 0; p < PX; ++p) {
      const int ox = ox0 + p, hw = oy * Wo + ox;
      if (ox >= Wo) break;
      float4 v = acc[o][p];
      CONV_EPILOGUE(v, n, s, hw);
      y_STORE4(n, s, hw, v);
    }
  }
}
#endif  // DIRECT

#if defined(IM2COL) || defined(CONV1X1)
// Grid (roundUp(NB, 64), Cin*K*K): Wt[k][c] = weight[co0 + c][k] for the block of NB
// output channels from co0, zero for co0 + c >= Cout.
__kernel void conv_pack_weights(weight_PARAMS, SD_REGION(float, Wt), const int Cout, const int NB, const int co0) {
  __global float* Wt = SD_AT(Wt);
  const int c = get_global_id(0), k = get_global_id(1), KK = weight_HW, co = co0 + c;
  if (c >= NB) return;
  Wt[(size_t)k * NB + c] = co < Cout ? weight_LOAD(co, k / KK, k % KK) : 0.0f;
}
#endif

#ifdef IM2COL
// Grid (roundUp(PP, 64), Cin*K*K, N): col[n][k][p], k = ci*K*K + ky*K + kx, p = oy*Wo + ox
// (zero for the padding and for p >= Ho*Wo).
__kernel void conv_im2col(x_PARAMS, SD_REGION(float, col), const int H, const int W, const int Wo, const int HoWo,
                          const int PP, const int K, const int stride, const int pad) {
  __global float* col = SD_AT(col);
  const int p = get_global_id(0), k = get_global_id(1), n = get_global_id(2);
  if (p >= PP) return;
  const int KK = K * K, ci = k / KK, t = k % KK, ky = t / K, kx = t % K;
  const int oy = p / Wo, ox = p % Wo, iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
  const bool in = p < HoWo && iy >= 0 && iy < H && ix >= 0 && ix < W;
  col[((size_t)n * x_C * KK + k) * PP + p] = in ? x_LOAD(n, ci, iy * W + ix) : 0.0f;
}
#endif

#if defined(IM2COL) || defined(CONV1X1) || defined(WINO)
// C[b](m, n) = sum_k A[b](k, m) * B[b](k, n): A = Wt or U [K][Mp] (Mp = the block's NB
// output channels), B = col, V [K][ldb] or x itself (CONV1X1); row m is output channel
// mOff + m (C's plane b has ldc channels: CoutP); work-group tile TM x TN, KT deep in local memory;
// each work-item holds RM x RN outputs: RM/4 float4 groups of channels and RN/4 groups
// of positions, group g at channel m0 + 4 * (g * WY + ty) (so neighbouring work-items
// read neighbouring float4s of local memory).
// Grid (ceil(Ncols / TN) * WX, ceil(Mp / TM) * WY, batches), local (WX, WY, 1).
//
// The half twins (im2col_gemm_f16, conv1x1_f16: SD_HALF, cl_khr_fp16) stage A and B in
// local memory as half4 (rounded once, when stored), and sum the products of one KT stage
// (KT products per output) in half4, each stage's sum joining the f32 accumulator: GEMM
// direct_f16's scheme (kernels/gemm/gemm.cl), so the error is ~u of the output at every
// K = Cin k k instead of growing as u sqrt(K). The epilogue (bias, temb, residual) adds
// in f32 on the f32 sum. The scratch (Wt, col) stays f32.
#define WX (TN / RN)
#define WY (TM / RM)
#ifdef SD_HALF
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#define CONV_T4 half4
#define CONV_TO_T4(v) convert_half4(v)
#else
#define CONV_T4 float4
#define CONV_TO_T4(v) (v)
#endif
__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void conv_gemm(SD_REGION(const float, A), const int aStride, const int Mp, const int K,
#ifdef CONV1X1
               x_PARAMS,
#else
               SD_REGION(const float, B), const int ldb,
#endif
#ifdef WINO
               SD_REGION(float, C), const int ldc,
#else
               bias_PARAMS, temb_PARAMS, residual_PARAMS, y_PARAMS, const int flags,
#endif
               const int mOff) {
  __global const float* A = SD_AT(A);
#ifndef CONV1X1
  __global const float* B = SD_AT(B);
#endif
#ifdef WINO
  __global float* C = SD_AT(C);
#endif
  __local CONV_T4 As[KT][TM / 4];
  __local CONV_T4 Bs[KT][TN / 4];
  const int tx = get_local_id(0), ty = get_local_id(1), lid = ty * WX + tx;
  const int b = get_global_id(2);
  const int m0 = get_group_id(1) * TM, n0 = get_group_id(0) * TN;
  A += (size_t)b * aStride;
#ifdef CONV1X1
  const int Ncols = x_HW;
#else
  const int Ncols = ldb;
  B += (size_t)b * K * ldb;
#endif
  float4 acc[RM][RN / 4];
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN / 4; ++j) acc[i][j] = (float4)(0.0f);
  for (int k0 = 0; k0 < K; k0 += KT) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < KT * (TM / 4); e += WX * WY) {
      const int m4 = e % (TM / 4), kk = e / (TM / 4), m = m0 + 4 * m4, k = k0 + kk;
      As[kk][m4] = CONV_TO_T4((k < K && m < Mp) ? vload4(0, A + (size_t)k * Mp + m) : (float4)(0.0f));
    }
    for (int e = lid; e < KT * (TN / 4); e += WX * WY) {
      const int n4 = e % (TN / 4), kk = e / (TN / 4), n = n0 + 4 * n4, k = k0 + kk;
#ifdef CONV1X1
      float4 v = (float4)(0.0f);
      if (k < K) {
        if (n < Ncols) v.x = x_LOAD(b, k, n);
        if (n + 1 < Ncols) v.y = x_LOAD(b, k, n + 1);
        if (n + 2 < Ncols) v.z = x_LOAD(b, k, n + 2);
        if (n + 3 < Ncols) v.w = x_LOAD(b, k, n + 3);
      }
      Bs[kk][n4] = CONV_TO_T4(v);
#else
      Bs[kk][n4] = CONV_TO_T4((k < K && n < Ncols) ? vload4(0, B + (size_t)k * ldb + n) : (float4)(0.0f));
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#ifdef SD_HALF
    half4 hacc[RM][RN / 4];  // this stage's sums (acc takes them after it)
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN / 4; ++j) hacc[i][j] = (half4)(0.0h);
#define CONV_ACC hacc
#else
#define CONV_ACC acc
#endif
    for (int kk = 0; kk < KT; ++kk) {
      CONV_T4 bv[RN / 4];
      for (int j = 0; j < RN / 4; ++j) bv[j] = Bs[kk][j * WX + tx];
      for (int g = 0; g < RM / 4; ++g) {
        const CONV_T4 av = As[kk][g * WY + ty];
        for (int j = 0; j < RN / 4; ++j) {
          CONV_ACC[4 * g][j] = fma((CONV_T4)(av.x), bv[j], CONV_ACC[4 * g][j]);
          CONV_ACC[4 * g + 1][j] = fma((CONV_T4)(av.y), bv[j], CONV_ACC[4 * g + 1][j]);
          CONV_ACC[4 * g + 2][j] = fma((CONV_T4)(av.z), bv[j], CONV_ACC[4 * g + 2][j]);
          CONV_ACC[4 * g + 3][j] = fma((CONV_T4)(av.w), bv[j], CONV_ACC[4 * g + 3][j]);
        }
      }
    }
#ifdef SD_HALF
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN / 4; ++j) acc[i][j] += convert_float4(hacc[i][j]);
#endif
#undef CONV_ACC
  }
  for (int g = 0; g < RM / 4; ++g) {
    const int m = m0 + 4 * (g * WY + ty);
    if (m >= Mp) break;
    for (int j = 0; j < RN / 4; ++j) {
      const int n = n0 + 4 * (j * WX + tx);
#ifdef WINO
      if (n < Ncols)
        for (int i = 0; i < 4; ++i) vstore4(acc[4 * g + i][j], 0, C + ((size_t)b * ldc + mOff + m + i) * ldb + n);
#else
      const int s = (mOff + m) / 4;
      for (int q = 0; q < 4; ++q) {
        const int hw = n + q;
        if (hw >= y_HW) break;
        float4 v = (float4)(sd_lane(acc[4 * g][j], q), sd_lane(acc[4 * g + 1][j], q),
                            sd_lane(acc[4 * g + 2][j], q), sd_lane(acc[4 * g + 3][j], q));
        CONV_EPILOGUE(v, b, s, hw);
        y_STORE4(b, s, hw, v);
      }
#endif
    }
  }
}
#endif  // IM2COL || CONV1X1 || WINO

#ifdef WINO
#define ALPHA (WM + 2)
// Transforms of F(WM x WM, 3 x 3) (Lavin & Gray; the interpolation points of wincnn:
// 0, +-1 (F2); 0, +-1, +-2 (F4); 0, +-1, +-2, +-1/2 (F6); and infinity). Checked
// in double: A^T [(G g G^T) . (B^T d B)] A equals the 3 x 3 correlation of d with g.
#if WM == 2
__constant float BT[ALPHA][ALPHA] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
__constant float G[ALPHA][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
__constant float AT[WM][ALPHA] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
#elif WM == 4
__constant float BT[ALPHA][ALPHA] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                     {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
__constant float G[ALPHA][3] = {{1.0f / 4, 0, 0},
                                {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                                {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                                {1.0f / 24, 1.0f / 12, 1.0f / 6},
                                {1.0f / 24, -1.0f / 12, 1.0f / 6},
                                {0, 0, 1}};
__constant float AT[WM][ALPHA] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
#elif WM == 6
__constant float BT[ALPHA][ALPHA] = {
    {1, 0, -5.25f, 0, 5.25f, 0, -1, 0},          {0, 1, 1, -4.25f, -4.25f, 1, 1, 0},
    {0, -1, 1, 4.25f, -4.25f, -1, 1, 0},         {0, 0.5f, 0.25f, -2.5f, -1.25f, 2, 1, 0},
    {0, -0.5f, 0.25f, 2.5f, -1.25f, -2, 1, 0},   {0, 2, 4, -2.5f, -5, 0.5f, 1, 0},
    {0, -2, 4, 2.5f, -5, -0.5f, 1, 0},           {0, -1, 0, 5.25f, 0, -5.25f, 0, 1}};
__constant float G[ALPHA][3] = {{1, 0, 0},
                                {-2.0f / 9, -2.0f / 9, -2.0f / 9},
                                {-2.0f / 9, 2.0f / 9, -2.0f / 9},
                                {1.0f / 90, 1.0f / 45, 2.0f / 45},
                                {1.0f / 90, -1.0f / 45, 2.0f / 45},
                                {1.0f / 45, 1.0f / 90, 1.0f / 180},
                                {1.0f / 45, -1.0f / 90, 1.0f / 180},
                                {0, 0, 1}};
__constant float AT[WM][ALPHA] = {{1, 1, 1, 1, 1, 32, 32, 0},   {0, 1, -1, 2, -2, 16, -16, 0},
                                  {0, 1, 1, 4, 4, 8, 8, 0},     {0, 1, -1, 8, -8, 4, -4, 0},
                                  {0, 1, 1, 16, 16, 2, 2, 0},   {0, 1, -1, 32, -32, 1, -1, 1}};
#else
#error "WM must be 2, 4 or 6"
#endif

// Grid (roundUp(NB, 64), Cin): U[xi][ci][c] = (G g G^T)[xi] of output channel co0 + c
// (the block of NB from co0), zero for co0 + c >= Cout.
__kernel void conv_wino_weights(weight_PARAMS, SD_REGION(float, U), const int Cout, const int NB, const int co0) {
  __global float* U = SD_AT(U);
  const int c = get_global_id(0), ci = get_global_id(1), Cin = weight_C, co = co0 + c;
  if (c >= NB) return;
  float g[3][3], t[ALPHA][3];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) g[i][j] = co < Cout ? weight_LOAD(co, ci, i * 3 + j) : 0.0f;
  for (int i = 0; i < ALPHA; ++i)
    for (int j = 0; j < 3; ++j) t[i][j] = G[i][0] * g[0][j] + G[i][1] * g[1][j] + G[i][2] * g[2][j];
  for (int i = 0; i < ALPHA; ++i)
    for (int j = 0; j < ALPHA; ++j)
      U[((size_t)(i * ALPHA + j) * Cin + ci) * NB + c] = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
}

// Grid (roundUp(TP, 64), Cin): V[xi][c][t] = (B^T d B)[xi] for the ALPHA x ALPHA input
// tile d of tile g = t0 + t (g = (n * tilesH + th) * tilesW + tw, origin (th*WM - pad,
// tw*WM - pad)), zero for t >= T (the block's tiles). One channel per work-item: ALPHA^2
// floats of state.
__kernel void conv_wino_input(x_PARAMS, SD_REGION(float, V), const int H, const int W, const int tilesH,
                              const int tilesW, const int T, const int TP, const int pad, const int t0) {
  __global float* V = SD_AT(V);
  const int t = get_global_id(0), c = get_global_id(1), Cin = x_C;
  if (t >= TP) return;
  float tmp[ALPHA][ALPHA];  // B^T d
  for (int i = 0; i < ALPHA; ++i)
    for (int j = 0; j < ALPHA; ++j) tmp[i][j] = 0.0f;
  if (t < T) {
    const int g = t0 + t, n = g / (tilesH * tilesW), r = g % (tilesH * tilesW);
    const int y0 = (r / tilesW) * WM - pad, x0 = (r % tilesW) * WM - pad;
    for (int k = 0; k < ALPHA; ++k) {
      const int iy = y0 + k;
      float d[ALPHA];
      for (int j = 0; j < ALPHA; ++j) {
        const int ix = x0 + j;
        d[j] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? x_LOAD(n, c, iy * W + ix) : 0.0f;
      }
      for (int i = 0; i < ALPHA; ++i)
        for (int j = 0; j < ALPHA; ++j) tmp[i][j] = fma(BT[i][k], d[j], tmp[i][j]);
    }
  }
  for (int i = 0; i < ALPHA; ++i)
    for (int j = 0; j < ALPHA; ++j) {
      float v = 0.0f;
      for (int l = 0; l < ALPHA; ++l) v = fma(tmp[i][l], BT[j][l], v);
      V[((size_t)(i * ALPHA + j) * Cin + c) * TP + t] = v;
    }
}

// Grid (roundUp(T, 64), CoutP / 4): Y = A^T M A for one tile and 4 output channels
// (float4: images store whole slices), then the epilogue. M holds the block of tiles
// from t0 and of output slices from s0 (CoutP: the block's channels).
__kernel void conv_wino_output(SD_REGION(const float, M), bias_PARAMS, temb_PARAMS, residual_PARAMS, y_PARAMS,
                               const int Wo, const int tilesH, const int tilesW, const int T, const int TP,
                               const int CoutP, const int flags, const int t0, const int s0) {
  __global const float* M = SD_AT(M);
  const int t = get_global_id(0), sb = get_global_id(1), s = s0 + sb;
  if (t >= T) return;
  const int g = t0 + t, n = g / (tilesH * tilesW), r = g % (tilesH * tilesW);
  const int oy0 = (r / tilesW) * WM, ox0 = (r % tilesW) * WM, Ho = y_HW / Wo;
  float4 tmp[WM][ALPHA];  // A^T M
  for (int i = 0; i < WM; ++i)
    for (int j = 0; j < ALPHA; ++j) tmp[i][j] = (float4)(0.0f);
  for (int k = 0; k < ALPHA; ++k)
    for (int j = 0; j < ALPHA; ++j) {
      const size_t base = ((size_t)(k * ALPHA + j) * CoutP + 4 * sb) * TP + t;
      const float4 mv = (float4)(M[base], M[base + TP], M[base + 2 * TP], M[base + 3 * TP]);
      for (int i = 0; i < WM; ++i) tmp[i][j] = fma((float4)(AT[i][k]), mv, tmp[i][j]);
    }
  for (int i = 0; i < WM; ++i) {
    const int oy = oy0 + i;
    if (oy >= Ho) break;
    for (int j = 0; j < WM; ++j) {
      const int ox = ox0 + j;
      if (ox >= Wo) break;
      float4 v = (float4)(0.0f);
      for (int l = 0; l < ALPHA; ++l) v = fma(tmp[i][l], (float4)(AT[j][l]), v);
      const int hw = oy * Wo + ox;
      CONV_EPILOGUE(v, n, s, hw);
      y_STORE4(n, s, hw, v);
    }
  }
}
#endif  // WINO
