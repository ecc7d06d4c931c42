// conv winograd_f2x2_coopmat_f16 (issue #22 item 1, "Winograd's batched-GEMM stage if it
// still wins"): Winograd F(2x2, 3x3) with its GEMM over the 16 planes on tensor cores.
// The stages are conv_winograd.comp's (input transform V = B^T d B into planes, output
// transform y = A^T M A + the epilogue) with U = G g G^T made as f16 weight rows per plane
// (its UH), and the GEMM is gemm_coopmat.comp run with the planes as its samples (grid z)
// and one U per plane (its wrows): M[xi] (tiles x channels) = V[xi]^T U[xi]^T, f16 products
// summed in f32; V and M stored in f16 (PF16 = 1, module conv_winograd_h; the GEMM then
// stages V column-major, its ACOL) or f32. So its parameters, constraints and device rule
// are gemm coopmat_f16's (shared memory: the larger of its two A layouts), without split-K (Cin is each plane's whole K, and 16 planes of
// tiles fill the GPU at every SD 1.5 size). API-neutral declaration; the Vulkan lowering is
// conv_winograd_vulkan.cpp; OpenCL has no kernel for it.
//
// Only F(2x2): with V and U rounded to f16 before the GEMM (the tensor cores' inputs), the
// output transform amplifies their rounding by its entries. Simulated in double with f16
// V and U and f32 sums (x ~ N(0, 1) rounded to f16, w ~ N(0, 1/(9 Cin)) in f16; Cin 320 at
// 32x32, 640 at 16x16, 1280 at 8x8): F(2x2) relL2 4.8e-4 to 5.0e-4, max 1.9e-3 to 2.3e-3,
// as coopmat_f16's implicit GEMM (relL2 2.1e-4 to 3.6e-4, max ~2e-3); F(4x4) relL2 3.1e-3 to
// 3.3e-3, max 3.4e-2 to 3.5e-2, 7x and 15x that, over the coopmat tolerance's relL2 3e-3.
// F(2x2) still does 4/9 of the direct convolution's multiplies.
#include <algorithm>

#include "kernels/common/half_variant.h"
#include "kernels/conv/conv_family.h"
#include "kernels/gemm/gemm_family.h"

namespace sdspeed {

VariantDef ConvFamily::winogradCoopMatVariant() {
  VariantDef c = GemmFamily::coopMatVariant();  // coopmat_f16: f16 arithmetic, cl_khr_fp16 / shaderFloat16
  c.name = kWinogradCoopMatVariant;
  c.summary = "Winograd F(2x2,3x3) with its GEMM over the 16 planes on tensor cores (VK_NV_cooperative_matrix): "
              "U as f16 rows, f16 products accumulated in f32, V and M planes in f16 or f32 (PF16)";
  // The Winograd tile (winogradTile) under a name of its own: "WM" is a coopmat parameter
  // here (accumulators per subgroup along the positions, i.e. the tiles).
  c.defines["WINO_TILE"] = 2;
  std::erase_if(c.params, [](const ParamDef& p) { return p.name == "SK"; });
  // The planes' storage: the GEMM rounds V to f16 on its way to the tensor cores anyway, so
  // f16 V changes nothing but its traffic; M in f16 adds its rounding before the output
  // transform (simulated as above, f16 output: relL2 6.3e-4, max 3.7e-3 at Cin 320, against
  // 5.3e-4 and 2.7e-3 with M in f32; within the tolerance). Half the bytes V and M move
  // (at 2x320x64x64, 42 MB each in f32), which the transforms and the GEMM's A loads are.
  c.params.push_back({"PF16", {1, 0}, "V and M planes stored in f16 (1) or f32 (0)"});
  // With f16 planes the GEMM stages V column-major (gemm_coopmat.comp's ACOL): KS rows of BM
  // positions (+ one uvec4 each) instead of BM rows of KS; the larger of the two layouts.
  c.localMemBytes = [](const ParamPoint& p) {
    const size_t stages = p["DB"] ? 2 : 1, ks = static_cast<size_t>(p["KS"]);
    const size_t bm = static_cast<size_t>(p["SGM"] * p["WM"] * p["CM"]), bn = static_cast<size_t>(p["SGN"] * p["WN"] * p["CN"]);
    const size_t colMajor = 2 * stages * (ks * (bm + 8) + bn * (ks + 8));
    return std::max(GemmFamily::coopMatLocalBytes(p, false), colMajor);
  };
  c.fitDefaults = nullptr;  // GEMM's fits SK, which this variant does not have
  c.deviceRule = [](const ParamPoint& p, const DeviceCaps& dev) {
    return GemmFamily::coopMatDeviceRule(p, dev, "conv");
  };
  // Below coopmat_f16 (2) untuned: the tune decides per instance where it wins.
  c.defaultRank = 0;
  return c;
}

bool ConvFamily::isWinogradCoopMat(const VariantDef& v) { return v.name == kWinogradCoopMatVariant; }

}  // namespace sdspeed
