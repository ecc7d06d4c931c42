// The upsample family's Vulkan lowering: upsample.comp, one dispatch.
#include "kernels/upsample/upsample_family.h"
#include "kernels/vulkan/vulkan_lowering.h"

namespace sdspeed {

std::unique_ptr<PreparedOp> lowerUpsampleVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  (void)v;
  const auto sh = fam.shapes(prob);
  const Shape& x = sh[0];
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t wg = static_cast<uint32_t>(p["WG"]), items = static_cast<uint32_t>(p["ITEMS"]);
  const uint32_t F = static_cast<uint32_t>(sh[1].w / x.w);
  const auto& pipe =
      be.pipeline(vulkanModuleFor("upsample", f), 2, 5 * 4, {vulkanLocalSizeX(be, wg), vk::specU32(1, items)});
  return std::make_unique<VkDispatchOp>(
      be, pipe,
      std::vector<uint32_t>{static_cast<uint32_t>(x.c), static_cast<uint32_t>(x.w), static_cast<uint32_t>(x.hw()), F,
                            layout},
      channelGrid(sh[1], layout, wg, items));
}

}  // namespace sdspeed
