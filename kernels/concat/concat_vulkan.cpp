// The concat family's Vulkan lowering: concat.comp, one dispatch.
#include "kernels/concat/concat_family.h"
#include "kernels/vulkan/vulkan_lowering.h"

namespace sdspeed {

std::unique_ptr<PreparedOp> lowerConcatVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                              const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  (void)v;
  const auto sh = fam.shapes(prob);
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t wg = static_cast<uint32_t>(p["WG"]), items = static_cast<uint32_t>(p["ITEMS"]);
  const auto& pipe =
      be.pipeline(vulkanModuleFor("concat", f), 3, 4 * 4, {vulkanLocalSizeX(be, wg), vk::specU32(1, items)});
  return std::make_unique<VkDispatchOp>(
      be, pipe,
      std::vector<uint32_t>{static_cast<uint32_t>(sh[0].c), static_cast<uint32_t>(sh[1].c),
                            static_cast<uint32_t>(sh[2].hw()), layout},
      channelGrid(sh[2], layout, wg, items));
}

}  // namespace sdspeed
