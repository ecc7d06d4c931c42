#version 450
// 2-D convolution on Vulkan (kernels/conv/conv_vulkan.cpp), the counterpart of conv.cl:
//   y[b, co, oy, ox] = sum_{ci, ky, kx} w[co, ci, ky, kx] x[b, ci, oy*S - P + ky, ox*S - P + kx]
//                      (+ bias[co]) (+ temb[b, co]) (+ residual[b, co, oy, ox])
// One module, two kernels chosen by the specialization constant MODE (the driver drops
// the other): 0 = conv_direct.glsl (the `direct` variant), 1 = conv_gemm.glsl (an
// implicit GEMM, `im2col_gemm` and `conv1x1`). One module keeps the family's source hash
// (kernels/lowering.cpp: the SPIR-V of the module named in the lowering table) over
// every conv kernel. Weights and bias are uint words in the op's weight format (f32, f16,
// q8_0, q4_0 blocks along each output channel's Cin * KS * KS; weights.glsl); x,
// temb, residual and y are sfp in the layout pushed (NCHW or NC4HW4, pad lanes written
// 0). Arithmetic is float, except the implicit GEMM's products in the f16-arithmetic
// modules (im2col_gemm_f16, conv1x1_f16: conv_gemm.glsl).
#include "../common/prelude.glsl"
#include "../common/weights.glsl"

layout(local_size_x_id = 0) in;  // direct: WGX * WGY; gemm: (TM / RM) * (TN / RN)
layout(constant_id = 1) const uint MODE = 0;
// The kernel size, stride and padding are specialization constants, not push constants:
// the implicit GEMM splits every reduction index k into (ci, ky, kx) while gathering x,
// and a division by a constant is a multiply and a shift, not a full integer division.
layout(constant_id = 2) const uint KS = 3;
layout(constant_id = 3) const uint STRIDE = 1;
layout(constant_id = 4) const uint PAD = 1;
const uint KK = KS * KS;
const uint WGS = gl_WorkGroupSize.x;

layout(std430, binding = 0) readonly buffer X { sfp x[]; };
SD_WEIGHT_BUFFER(1, Wt, w)        // [Cout][Cin * KS * KS] in SD_WFMT (weights.glsl)
SD_WEIGHT_BUFFER(2, Bias, wbias)  // in SD_PFMT
layout(std430, binding = 3) readonly buffer Temb { sfp temb[]; };
layout(std430, binding = 4) readonly buffer Res { sfp res[]; };
layout(std430, binding = 5) writeonly buffer Y { sfp y[]; };
layout(push_constant) uniform Push {
  uint Cin, H, W, Cout, Ho, Wo, flags, layout_;  // flags: 1 bias, 2 temb, 4 residual (CONV_* in conv.cl)
} p;

// x[b, ci, iy, ix], zero outside the image (the padding).
// Branch-free where `ok` is false or the pixel is padding (SD_GUARD, prelude.glsl: the
// staging loops' loads all in flight at once); loadX is the same with ok = true.
float loadXGuarded(bool ok, uint b, uint ci, int iy, int ix) {
  const bool in_ = all(bvec3(ok, all(greaterThanEqual(ivec2(iy, ix), ivec2(0))),
                             all(lessThan(ivec2(iy, ix), ivec2(p.H, p.W)))));
  const uint pix = uint(iy) * p.W + uint(ix);
  const float v = float(x[sd_index(p.layout_, b, SD_GUARD(in_, ci), SD_GUARD(in_, pix), p.Cin, p.H * p.W)]);
  return in_ ? v : 0.0;
}
float loadX(uint b, uint ci, int iy, int ix) { return loadXGuarded(true, b, ci, iy, ix); }

// Stores the sum `acc` of output (b, co, n) (n = oy * Wo + ox) after the fused epilogue,
// in conv.cl's order (bias, temb, residual); channels from Cout up to the stored ones
// (NC4HW4's pad lanes) are written 0. The caller keeps co below the stored channels.
void storeY(uint b, uint co, uint n, float acc) {
  const uint HoWo = p.Ho * p.Wo;
  float v = 0.0;
  if (co < p.Cout) {
    v = acc;
    if ((p.flags & 1u) != 0u) v += wbias_p(co);
    if ((p.flags & 2u) != 0u) v += float(temb[sd_index(p.layout_, b, co, 0u, p.Cout, 1u)]);
    if ((p.flags & 4u) != 0u) v += float(res[sd_index(p.layout_, b, co, n, p.Cout, HoWo)]);
  }
  y[sd_index(p.layout_, b, co, n, p.Cout, HoWo)] = sfp(v);
}

// Each kernel file is included twice: SD_CONV_PART 0 declares its specialization
// constants and shared-memory sizes, 1 its code. Between them, both kernels' shared
// memory: one pool sized for the kernel MODE picks. Two arrays would each take room in
// the other's pipeline too (the validation layer, and maybe a driver, counts a declared
// array whether or not the code left uses it): past a 32 KiB device's limit at the
// family's largest tiles.
#define SD_CONV_PART 0
#include "conv_direct.glsl"
#include "conv_gemm.glsl"
shared vec4 smem[MODE == 0u ? WS_VEC4 : TILES_VEC4];
#undef SD_CONV_PART
#define SD_CONV_PART 1
#include "conv_direct.glsl"
#include "conv_gemm.glsl"

void main() {
  if (MODE == 0u)
    convDirect();
  else
    convGemm();
}
