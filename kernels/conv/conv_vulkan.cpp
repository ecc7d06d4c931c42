// The conv family's Vulkan lowering: conv.comp, one dispatch. `direct` runs
// conv_direct.glsl; `im2col_gemm` and `conv1x1` run conv_gemm.glsl, an implicit GEMM that
// gathers x's im2col columns into shared memory itself: no scratch and no packed weights
// on Vulkan, so the op asks for none (no scratchRegions, no derived weights). The
// Winograd variants are conv_winograd_vulkan.cpp's (their own module). w is read in
// the op's weight format (f32, f16, q8_0, q4_0) and bias in f32 or f16, decoded from uint
// words (kernels/common/weights.glsl, specialization constant 20).
#include "kernels/common/half_variant.h"
#include "kernels/conv/conv_family.h"
#include "kernels/conv/conv_winograd_vulkan.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

namespace sdspeed {

// coopmat_f16, tensor cores (conv_coopmat_vulkan.cpp).
std::unique_ptr<PreparedOp> lowerConvCoopMatVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                   const ParamPoint& p, const ConvProblem& c, const StorageFormat& f);

namespace {

constexpr uint32_t kModeDirect = 0, kModeGemm = 1;  // conv.comp's MODE


}  // namespace

std::unique_ptr<PreparedOp> lowerConvVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                            const ParamPoint& pt, const Problem& prob, const StorageFormat& f) {
  const std::string base = baseVariantName(v);  // the half twins run conv.comp's afp modules
  const bool direct = base == "direct", gemm = base == "im2col_gemm" || base == "conv1x1";
  const auto* c = dynamic_cast<const ConvProblem*>(&prob);
  if (!c) throw Error("conv given a problem of another family: " + prob.text());
  if (ConvFamily::winogradTile(v)) return lowerConvWinogradVulkan(be, fam, v, pt, *c, f);
  if (ConvFamily::isCoopMat(v)) return lowerConvCoopMatVulkan(be, fam, v, pt, *c, f);
  if (!direct && !gemm) throw UnsupportedError("conv " + v.name + " has no vulkan kernels");
  const ConvDims& d = c->dims;
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t Ho = u32(d.outHeight()), Wo = u32(d.outWidth()), N = u32(d.batch);
  const uint32_t stored = layout == 1u ? (u32(d.cout) + 3u) / 4u * 4u : u32(d.cout);
  // The problem's kernel, stride and pad are specialization constants 2-4 (conv.comp says why).
  std::vector<vk::SpecConstant> spec = {vk::specU32(1, direct ? kModeDirect : kModeGemm),
                                        vk::specU32(2, u32(d.kernel)), vk::specU32(3, u32(d.stride)),
                                        vk::specU32(4, u32(d.pad))};
  std::array<uint32_t, 3> groups{};
  uint32_t wg = 0;
  // The other kernel's constants get small valid values: its code is dead, and its private
  // arrays (the GEMM's prefetch registers) stay tiny; shared memory is one pool sized by
  // MODE (conv.comp).
  if (direct) {
    const uint32_t wgx = u32(pt["WGX"]), wgy = u32(pt["WGY"]), co = u32(pt["CO"]), px = u32(pt["PX"]);
    wg = wgx * wgy;
    spec.insert(spec.end(), {vk::specU32(5, wgx), vk::specU32(6, co), vk::specU32(7, px),
                             vk::specU32(8, u32(pt["CB"])), vk::specU32(9, 4), vk::specU32(10, 4),
                             vk::specU32(11, 4), vk::specU32(12, 4), vk::specU32(13, 1), vk::specU32(14, 0)});
    const uint32_t coBlocks = (u32(d.cout) + co - 1) / co;
    groups = {((Wo + px - 1) / px + wgx - 1) / wgx, (Ho + wgy - 1) / wgy, N * coBlocks};
  } else {
    const uint32_t tm = u32(pt["TM"]), tn = u32(pt["TN"]), rm = u32(pt["RM"]), rn = u32(pt["RN"]),
                   kt = u32(pt["KT"]);
    wg = (tm / rm) * (tn / rn);  // the family's constraint keeps it in [16, 256]
    // A's tile rows padded by a vec4 where the device's shared memory holds it (the
    // family's localMemBytes, checked by its device rules, counts the unpadded tiles).
    const uint64_t padded = static_cast<uint64_t>(kt) * (tm + 4 + tn) * 4;
    const uint32_t apad = padded <= be.caps().localMemBytes ? 1u : 0u;
    spec.insert(spec.end(), {vk::specU32(5, wg), vk::specU32(6, 4), vk::specU32(7, 1), vk::specU32(8, 1),
                             vk::specU32(9, tm), vk::specU32(10, tn), vk::specU32(11, rm), vk::specU32(12, rn),
                             vk::specU32(13, kt), vk::specU32(14, apad)});
    groups = {(Ho * Wo + tn - 1) / tn, (stored + tm - 1) / tm, N};
  }
  // Very large images can exceed a dimension's work-group count (65535 on some devices).
  vulkanCheckGroupCount(be, "conv " + v.name, groups);
  spec.insert(spec.begin(), vulkanLocalSizeX(be, wg));
  spec.push_back(vulkanWeightFormat(fam, f));
  const auto& pipe = be.pipeline(vulkanModuleFor("conv", f), 6, 8 * 4, spec);
  const uint32_t flags = (c->bias ? 1u : 0u) | (c->temb ? 2u : 0u) | (c->residual ? 4u : 0u);
  return std::make_unique<VkDispatchOp>(
      be, pipe,
      std::vector<uint32_t>{u32(d.cin), u32(d.height), u32(d.width), u32(d.cout), Ho, Wo, flags, layout}, groups,
      kVkWeightBindings12);
}

}  // namespace sdspeed
