#version 450
// Winograd F(WM x WM, 3 x 3) convolution on Vulkan (kernels/conv/conv_winograd_vulkan.cpp),
// the counterpart of conv.cl's WINO kernels, ALPHA = WM + 2:
//   STAGE 0 weights: U [ALPHA^2][Cin][NB] = G g G^T of output channels co0 .. co0 + NB
//                    (once per weight tensor and cached, or per block at every call);
//   STAGE 1 input:   V [ALPHA^2][Cin][TP] = B^T d B of tiles t0 .. t0 + T (TP = T rounded to 4);
//   STAGE 2 GEMM:    M [ALPHA^2][NB][TP] = U^T V, batched over the ALPHA^2 planes
//                    (winograd_f2x2_coopmat_f16: gemm_coopmat.comp instead, U f16 rows, UH);
//   STAGE 3 output:  y = A^T M A + the epilogue (bias, temb, residual), 4 channels a tile.
// One module, the stage and the tile m specialization constants (one pipeline each). V
// and M share one scratch binding (`planes`, M from word mOff): with U that keeps the
// module at 8 storage buffers, the backend recorder's most. Scratch and U are f32 whatever
// the storage (as OpenCL's); x, temb, residual, y are sfp in the layout pushed; w and bias
// are uint words in the op's weight format (weights.glsl: f32, f16, q8_0, q4_0).
// Arithmetic is float: Winograd has no half twin (conv's are the implicit GEMM's).
// WINO_PLANES_F16 = 1 (module conv_winograd_h, winograd_f2x2_coopmat_f16 at PF16 = 1): V and
// M stored as f16 (their GEMM rounds V to f16 anyway; M's rounding is the cost), half the
// planes' traffic; the scalar GEMM stage is left out of it.
#if WINO_PLANES_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define pfp float16_t
#else
#define pfp float
#endif
#include "../common/prelude.glsl"
#include "../common/weights.glsl"

layout(local_size_x_id = 0) in;  // 64 for the transforms; (TM / RM) * (TN / RN) for the GEMM
layout(constant_id = 1) const uint STAGE = 0;
layout(constant_id = 2) const uint WM = 2;   // 2, 4 or 6
layout(constant_id = 3) const uint PAD = 1;  // the convolution's padding (3x3, stride 1)
// The GEMM's tiles (conv.cl's conv_gemm parameters), as conv_gemm.glsl takes them.
layout(constant_id = 9) const uint TM = 64;
layout(constant_id = 10) const uint TN = 64;
layout(constant_id = 11) const uint RM = 8;
layout(constant_id = 12) const uint RN = 4;
layout(constant_id = 13) const uint KT = 16;
// U's layout (STAGE 0): 0 f32 [ALPHA^2][Cin][NB] for STAGE 2 here; 1 f16 weight rows
// [ALPHA^2][NB][Cin], two halves a word (the low one first, weights.glsl's f16), for
// winograd_f2x2_coopmat_f16, whose GEMM is gemm_coopmat.comp with one U per plane (its
// wrows) reading them as an f16 weight matrix per plane (Cin % 8 == 0: whole chunks).
layout(constant_id = 14) const uint UH = 0;
const uint ALPHA = WM + 2u;
const uint WGS = gl_WorkGroupSize.x;

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
SD_WEIGHT_BUFFER(1, Wt, w)        // [Cout][Cin * 9] in SD_WFMT (weights.glsl)
SD_WEIGHT_BUFFER(2, Bias, wbias)  // in SD_PFMT
layout(std430, binding = 3) readonly buffer Temb { sfp temb[]; };
layout(std430, binding = 4) readonly buffer Res { sfp res[]; };
layout(std430, binding = 5) writeonly buffer Y { sfp y[]; };
layout(std430, binding = 6) buffer Ut { float u[]; };          // written by STAGE 0, read by 2
layout(std430, binding = 6) writeonly buffer Uh { uint uh[]; };  // U again, as f16 pairs (UH = 1)
layout(std430, binding = 7) buffer Planes { pfp planes[]; };  // V from 0, M from mOff
layout(push_constant) uniform Push {
  uint Cin, H, W, Cout, Ho, Wo, flags, layout_;  // flags: 1 bias, 2 temb, 4 residual (CONV_* in conv.cl)
  uint tilesH, tilesW;  // tiles per image
  uint T, TP;           // this block's tiles (from t0) and T rounded up to 4 (V's and M's row length)
  uint NB, co0, t0;     // this block's output channels (a multiple of 4, from co0); its first tile
  uint mOff;            // where M starts in `planes` (its elements)
} p;

// The transforms (conv.cl's, the wincnn points 0, +-1, +-2, +-1/2 and infinity; checked
// in double there), row-major. Indexed by loop counters that the specialized WM bounds.
const float BT2[16] = float[](1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1);
const float G2[12] = float[](1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1);
const float AT2[8] = float[](1, 1, 1, 0, 0, 1, -1, -1);
const float BT4[36] = float[](4, 0, -5, 0, 1, 0, 0, -4, -4, 1, 1, 0, 0, 4, -4, -1, 1, 0,
                              0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0, 0, 4, 0, -5, 0, 1);
const float G4[18] = float[](1.0 / 4.0, 0, 0, -1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0,
                             1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0, 1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0, 0, 0, 1);
const float AT4[24] = float[](1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1);
const float BT6[64] = float[](1, 0, -5.25, 0, 5.25, 0, -1, 0,      0, 1, 1, -4.25, -4.25, 1, 1, 0,
                              0, -1, 1, 4.25, -4.25, -1, 1, 0,     0, 0.5, 0.25, -2.5, -1.25, 2, 1, 0,
                              0, -0.5, 0.25, 2.5, -1.25, -2, 1, 0, 0, 2, 4, -2.5, -5, 0.5, 1, 0,
                              0, -2, 4, 2.5, -5, -0.5, 1, 0,       0, -1, 0, 5.25, 0, -5.25, 0, 1);
const float G6[24] = float[](1, 0, 0, -2.0 / 9.0, -2.0 / 9.0, -2.0 / 9.0, -2.0 / 9.0, 2.0 / 9.0, -2.0 / 9.0,
                             1.0 / 90.0, 1.0 / 45.0, 2.0 / 45.0, 1.0 / 90.0, -1.0 / 45.0, 2.0 / 45.0,
                             1.0 / 45.0, 1.0 / 90.0, 1.0 / 180.0, 1.0 / 45.0, -1.0 / 90.0, 1.0 / 180.0, 0, 0, 1);
const float AT6[48] = float[](1, 1, 1, 1, 1, 32, 32, 0,  0, 1, -1, 2, -2, 16, -16, 0,  0, 1, 1, 4, 4, 8, 8, 0,
                              0, 1, -1, 8, -8, 4, -4, 0, 0, 1, 1, 16, 16, 2, 2, 0,    0, 1, -1, 32, -32, 1, -1, 1);
float BT(uint i, uint k) { return WM == 2u ? BT2[i * 4u + k] : WM == 4u ? BT4[i * 6u + k] : BT6[i * 8u + k]; }
float G(uint i, uint j) { return WM == 2u ? G2[i * 3u + j] : WM == 4u ? G4[i * 3u + j] : G6[i * 3u + j]; }
float AT(uint i, uint k) { return WM == 2u ? AT2[i * 4u + k] : WM == 4u ? AT4[i * 6u + k] : AT6[i * 8u + k]; }

// Invocation (c, ci): U[xi][ci][c] = (G g G^T)[xi] of output channel co0 + c, zero past
// Cout. UH = 1: invocation (c, h) makes input channels 2h and 2h + 1 of row c, one word
// per plane, U[xi][c][2h .. 2h + 1].
void winoWeights() {
  const uint c = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y, co = p.co0 + c, K = p.Cin * 9u;
  if (c >= p.NB) return;
  const uint n = UH == 1u ? 2u : 1u;  // input channels per invocation
  float t[2u * ALPHA * 3u];           // G g of each
  for (uint h = 0u; h < n; ++h) {
    const uint ci = n * y + h;
    float g[9];
    for (uint i = 0u; i < 9u; ++i) g[i] = co < p.Cout ? w_w(co, ci * 9u + i, K) : 0.0;
    for (uint i = 0u; i < ALPHA; ++i)
      for (uint j = 0u; j < 3u; ++j)
        t[(h * ALPHA + i) * 3u + j] = G(i, 0u) * g[j] + G(i, 1u) * g[3u + j] + G(i, 2u) * g[6u + j];
  }
  for (uint i = 0u; i < ALPHA; ++i)
    for (uint j = 0u; j < ALPHA; ++j) {
      vec2 v = vec2(0.0);
      for (uint h = 0u; h < n; ++h) {
        const uint r = (h * ALPHA + i) * 3u;
        v[h] = t[r] * G(j, 0u) + t[r + 1u] * G(j, 1u) + t[r + 2u] * G(j, 2u);
      }
      const uint xi = i * ALPHA + j;
      if (UH == 1u)
        uh[((xi * p.NB + c) * p.Cin) / 2u + y] = packHalf2x16(v);
      else
        u[(xi * p.Cin + y) * p.NB + c] = v.x;
    }
}

// Invocation (t, c): V[xi][c][t] = (B^T d B)[xi] for the ALPHA x ALPHA input tile d of
// tile t0 + t (origin (th * WM - PAD, tw * WM - PAD)), zero for t >= T (the row's pad).
void winoInput() {
  const uint t = gl_GlobalInvocationID.x, c = gl_GlobalInvocationID.y;
  if (t >= p.TP) return;
  float tmp[ALPHA * ALPHA];  // B^T d
  for (uint i = 0u; i < ALPHA * ALPHA; ++i) tmp[i] = 0.0;
  if (t < p.T) {
    const uint g = p.t0 + t, per = p.tilesH * p.tilesW, n = g / per, r = g - n * per, th = r / p.tilesW;
    const int y0 = int(th * WM) - int(PAD), x0 = int((r - th * p.tilesW) * WM) - int(PAD);
    for (uint k = 0u; k < ALPHA; ++k) {
      const int iy = y0 + int(k);
      float d[ALPHA];
      for (uint j = 0u; j < ALPHA; ++j) {
        const int ix = x0 + int(j);
        d[j] = (iy >= 0 && iy < int(p.H) && ix >= 0 && ix < int(p.W))
                   ? float(x[sd_index(p.layout_, n, c, uint(iy) * p.W + uint(ix), p.Cin, p.H * p.W)])
                   : 0.0;
      }
      for (uint i = 0u; i < ALPHA; ++i)
        for (uint j = 0u; j < ALPHA; ++j) tmp[i * ALPHA + j] = fma(BT(i, k), d[j], tmp[i * ALPHA + j]);
    }
  }
  for (uint i = 0u; i < ALPHA; ++i)
    for (uint j = 0u; j < ALPHA; ++j) {
      float v = 0.0;
      for (uint l = 0u; l < ALPHA; ++l) v = fma(tmp[i * ALPHA + l], BT(j, l), v);
      planes[((i * ALPHA + j) * p.Cin + c) * p.TP + t] = pfp(v);
    }
}

#if !WINO_PLANES_F16
#include "conv_winograd_gemm.glsl"
#endif

// Invocation (t, sb): y = A^T M A for tile t0 + t and the 4 channels co0 + 4 sb .., then
// conv.cl's epilogue (bias, temb, residual); NC4HW4's pad lanes are written 0.
void winoOutput() {
  const uint t = gl_GlobalInvocationID.x, sb = gl_GlobalInvocationID.y;
  if (t >= p.T) return;
  const uint g = p.t0 + t, per = p.tilesH * p.tilesW, n = g / per, r = g - n * per, th = r / p.tilesW;
  const uint oy0 = th * WM, ox0 = (r - th * p.tilesW) * WM, HoWo = p.Ho * p.Wo;
  vec4 tmp[WM * ALPHA];  // A^T M, 4 channels as a vec4
  for (uint i = 0u; i < WM * ALPHA; ++i) tmp[i] = vec4(0.0);
  for (uint k = 0u; k < ALPHA; ++k)
    for (uint j = 0u; j < ALPHA; ++j) {
      const uint base = p.mOff + ((k * ALPHA + j) * p.NB + 4u * sb) * p.TP + t;
      const vec4 mv = vec4(float(planes[base]), float(planes[base + p.TP]), float(planes[base + 2u * p.TP]),
                           float(planes[base + 3u * p.TP]));
      for (uint i = 0u; i < WM; ++i) tmp[i * ALPHA + j] = fma(vec4(AT(i, k)), mv, tmp[i * ALPHA + j]);
    }
  const uint stored = sd_stored_channels(p.layout_, p.Cout);
  for (uint i = 0u; i < WM; ++i) {
    const uint oy = oy0 + i;
    if (oy >= p.Ho) break;
    for (uint j = 0u; j < WM; ++j) {
      const uint ox = ox0 + j;
      if (ox >= p.Wo) break;
      vec4 v = vec4(0.0);
      for (uint l = 0u; l < ALPHA; ++l) v = fma(tmp[i * ALPHA + l], vec4(AT(j, l)), v);
      const uint hw = oy * p.Wo + ox;
      for (uint q = 0u; q < 4u; ++q) {
        const uint co = p.co0 + 4u * sb + q;
        if (co >= stored) break;
        float o = 0.0;
        if (co < p.Cout) {
          o = v[q];
          if ((p.flags & 1u) != 0u) o += wbias_p(co);
          if ((p.flags & 2u) != 0u) o += float(temb[sd_index(p.layout_, n, co, 0u, p.Cout, 1u)]);
          if ((p.flags & 4u) != 0u) o += float(res[sd_index(p.layout_, n, co, hw, p.Cout, HoWo)]);
        }
        y[sd_index(p.layout_, n, co, hw, p.Cout, HoWo)] = sfp(o);
      }
    }
  }
}

void main() {
  if (STAGE == 0u)
    winoWeights();
  else if (STAGE == 1u)
    winoInput();
  else if (STAGE == 2u)
#if !WINO_PLANES_F16
    winoGemm();
#else
    return;
#endif
  else
    winoOutput();
}
