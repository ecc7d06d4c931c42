// The reshape family's Vulkan lowering: reshape.comp, one dispatch (a copy: in buffer
// storage the bytes are the same, so a runtime may alias instead).
#include "kernels/reshape/reshape_family.h"
#include "kernels/vulkan/vulkan_lowering.h"

namespace sdspeed {

std::unique_ptr<PreparedOp> lowerReshapeVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                               const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  (void)v;
  const Shape y = fam.shapes(prob).back();
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t wg = static_cast<uint32_t>(p["WG"]), items = static_cast<uint32_t>(p["ITEMS"]);
  const auto& pipe =
      be.pipeline(vulkanModuleFor("reshape", f), 2, 3 * 4, {vulkanLocalSizeX(be, wg), vk::specU32(1, items)});
  return std::make_unique<VkDispatchOp>(
      be, pipe, std::vector<uint32_t>{static_cast<uint32_t>(y.c), static_cast<uint32_t>(y.hw()), layout},
      channelGrid(y, layout, wg, items));
}

}  // namespace sdspeed
