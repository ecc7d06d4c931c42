// The Vulkan lowering of gemm coopmat_f16 (kernels/gemm/gemm_coopmat.comp): the point's
// coopmat shape, warp tile, subgroups, K step and double buffering as specialization
// constants with the layout and the staging paths, the problem as gemm.comp's push
// constants but the layout, one dispatch of a work-group per
// BM x BN output tile per sample. Refused in one line where the build's glslc made no
// module (no GL_NV_cooperative_matrix) or the device did not enable the extension; the
// family's device rule (gemm_coopmat.cpp) has already checked the device's shape list.
#include "kernels/gemm/gemm_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

namespace sdspeed {

std::unique_ptr<PreparedOp> lowerGemmCoopMatVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                   const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  const auto* g = dynamic_cast<const GemmProblem*>(&prob);
  if (!g) throw Error("gemm given a problem of another family: " + prob.text());
  const VulkanCoopMatModule module = vulkanCoopMatModule(
      be, "gemm", v, "gemm_coopmat", [&] { return GemmFamily::coopMatDeviceRule(p, be.caps()); });
  const uint32_t epi = static_cast<uint32_t>(GemmFamily::epilogueCode(g->epilogue));
  const Shape y = g->outShape();
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t flags = (g->bias ? 1u : 0u) | (g->residual ? 2u : 0u);
  std::vector<uint32_t> push{u32(g->x.c), u32(y.c), u32(y.hw()), epi, flags};  // the layout: constant 14
  auto u = [&](const char* k) { return static_cast<uint32_t>(p[k]); };
  // 32: the device rule checked it (the emulation makes its own groups of 32).
  const uint32_t subgroup = module.emulated ? 32u : be.info().subgroupSize;
  const uint32_t bm = u("SGM") * u("WM") * u("CM"), bn = u("SGN") * u("WN") * u("CN");
  // The staging's vector loads (gemm_coopmat.comp: AVEC, BVEC), wherever the layout and the
  // problem keep every quad or chunk whole and aligned; per element otherwise.
  const uint32_t avec = vulkanVectorStaging() && layout == 1u ? 1u : 0u;
  const uint32_t bvec = vulkanWeightChunks(fam, f, g->x.c);
  const auto& pipe = be.pipeline(
      vulkanModuleFor(module.name, f), 5, 5 * 4,
      {vulkanLocalSizeX(be, u("SGM") * u("SGN") * subgroup), vk::specU32(1, u("CM")), vk::specU32(2, u("CN")),
       vk::specU32(3, u("CK")), vk::specU32(4, u("WM")), vk::specU32(5, u("WN")), vk::specU32(6, u("SGM")),
       vk::specU32(7, u("SGN")), vk::specU32(8, u("KS")), vk::specU32(9, u("DB")),
       vk::specU32(10, g->epilogue == "geglu" ? 2u : 1u), vk::specU32(11, subgroup), vk::specU32(12, avec),
       vk::specU32(13, bvec), vk::specU32(14, layout), vulkanWeightFormat(fam, f)});
  // Output channels in tiles of BN: BN is a multiple of 8, so the tiles also cover
  // NC4HW4's padding channels (C rounded up to 4), which the shader writes as 0.
  return std::make_unique<VkDispatchOp>(be, pipe, std::move(push),
                                        std::array<uint32_t, 3>{ceilDiv(y.hw(), bm), ceilDiv(y.c, bn), u32(y.n)},
                                        kVkWeightBindings12);
}

}  // namespace sdspeed
