// The embedding family's Vulkan lowering: embedding.comp, one dispatch inside the
// family's EmbeddingOp, which checks the token ids on the host first (the gather has no
// bounds check), as on OpenCL. The tables are read in f32 or f16 (weights.glsl).
#include "kernels/common/elementwise.h"
#include "kernels/embedding/embedding_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

namespace sdspeed {

std::unique_ptr<PreparedOp> lowerEmbeddingVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                 const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  (void)v;
  const auto sh = fam.shapes(prob);
  const Shape& y = sh.back();
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t wg = static_cast<uint32_t>(p["WG"]), items = static_cast<uint32_t>(p["ITEMS"]);
  const auto& pipe =
      be.pipeline(vulkanModuleFor("embedding", f), 4, 3 * 4, {vulkanLocalSizeX(be, wg), vk::specU32(1, items),
                                                            vulkanWeightFormat(fam, f)});  // tables: f32 or f16
  auto gather = std::make_unique<VkDispatchOp>(
      be, pipe, std::vector<uint32_t>{static_cast<uint32_t>(y.c), static_cast<uint32_t>(y.hw()), layout},
      channelGrid(y, layout, wg, items), kVkWeightBindings12);
  return std::make_unique<EmbeddingOp>(std::move(gather), sh[1].n);
}

}  // namespace sdspeed
