// The binary family's Vulkan lowering: binary.comp, one dispatch.
#include "kernels/binary/binary_family.h"
#include "kernels/vulkan/vulkan_lowering.h"


namespace sdspeed {

std::unique_ptr<PreparedOp> lowerBinaryVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                              const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  (void)v;
  const auto& b = asShapeAttr(prob, fam.name());
  const Shape y = fam.shapes(prob).back();
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t wg = static_cast<uint32_t>(p["WG"]), items = static_cast<uint32_t>(p["ITEMS"]);
  const uint32_t C = static_cast<uint32_t>(y.c), hw = static_cast<uint32_t>(y.hw());
  const auto& pipe = be.pipeline(vulkanModuleFor("binary", f), 3, 5 * 4, {vulkanLocalSizeX(be, wg), vk::specU32(1, items)});
  return std::make_unique<VkDispatchOp>(
      be, pipe,
      std::vector<uint32_t>{C, hw, b.attrs.at("fn") == "mul" ? 1u : 0u, b.attrs.at("broadcast") == "1" ? 1u : 0u,
                            layout},
      channelGrid(y, layout, wg, items));
}

}  // namespace sdspeed
