// The Vulkan lowering of conv coopmat_f16 (kernels/conv/conv_coopmat.comp): the point's
// coopmat shape, warp tile, subgroups, K step and double buffering, and the problem's
// kernel size, stride and pad as specialization constants; conv.comp's push constants;
// one dispatch of a work-group per BM positions x BN output channels per sample. Refused
// in one line where the build's glslc made no module (no GL_NV_cooperative_matrix) or the
// device did not enable the extension; the device rule has checked the shape list.
#include "kernels/conv/conv_family.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

namespace sdspeed {

std::unique_ptr<PreparedOp> lowerConvCoopMatVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                   const ParamPoint& p, const ConvProblem& c, const StorageFormat& f) {
  const VulkanCoopMatModule module = vulkanCoopMatModule(
      be, "conv", v, "conv_coopmat", [&] { return GemmFamily::coopMatDeviceRule(p, be.caps(), "conv"); });
  const ConvDims& d = c.dims;
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t Ho = u32(d.outHeight()), Wo = u32(d.outWidth()), N = u32(d.batch);
  const uint32_t stored = layout == 1u ? (u32(d.cout) + 3u) / 4u * 4u : u32(d.cout);
  auto u = [&](const char* k) { return static_cast<uint32_t>(p[k]); };
  const uint32_t subgroup = module.emulated ? 32u : be.info().subgroupSize;  // 32: the device rule checked it
  const uint32_t bm = u("SGM") * u("WM") * u("CM"), bn = u("SGN") * u("WN") * u("CN");
  // Output channels in tiles of BN (a multiple of 8): they also cover NC4HW4's padding
  // channels, which the shader writes as 0.
  const std::array<uint32_t, 3> groups{ceilDiv(Ho * Wo, bm), ceilDiv(stored, bn), N};
  vulkanCheckGroupCount(be, "conv " + v.name, groups);
  const auto& pipe = be.pipeline(
      vulkanModuleFor(module.name, f), 6, 8 * 4,
      {vulkanLocalSizeX(be, u("SGM") * u("SGN") * subgroup), vk::specU32(1, u("CM")), vk::specU32(2, u("CN")),
       vk::specU32(3, u("CK")), vk::specU32(4, u("WM")), vk::specU32(5, u("WN")), vk::specU32(6, u("SGM")),
       vk::specU32(7, u("SGN")), vk::specU32(8, u("KS")), vk::specU32(9, u("DB")), vk::specU32(10, subgroup),
       vk::specU32(11, u32(d.kernel)), vk::specU32(12, u32(d.stride)), vk::specU32(13, u32(d.pad)),
       vulkanWeightFormat(fam, f)});
  const uint32_t flags = (c.bias ? 1u : 0u) | (c.temb ? 2u : 0u) | (c.residual ? 4u : 0u);
  return std::make_unique<VkDispatchOp>(
      be, pipe, std::vector<uint32_t>{u32(d.cin), u32(d.height), u32(d.width), u32(d.cout), Ho, Wo, flags, layout},
      groups, kVkWeightBindings12);
}

}  // namespace sdspeed
