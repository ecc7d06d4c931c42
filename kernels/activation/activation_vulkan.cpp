// The activation family's Vulkan lowering: activation.comp, one dispatch.
#include "kernels/activation/activation_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"


namespace sdspeed {

std::unique_ptr<PreparedOp> lowerActivationVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                  const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  (void)v;
  const auto& a = dynamic_cast<const ActivationProblem&>(prob);
  const auto sh = fam.shapes(prob);
  const uint32_t fn = static_cast<uint32_t>(ActivationFamily::fnCode(a.fn));
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t wg = static_cast<uint32_t>(p["WG"]), items = static_cast<uint32_t>(p["ITEMS"]);
  const uint32_t hw = static_cast<uint32_t>(sh[1].hw()), F = static_cast<uint32_t>(sh[1].c);
  const auto& pipe =
      be.pipeline(vulkanModuleFor("activation", f), 2, 5 * 4, {vulkanLocalSizeX(be, wg), vk::specU32(1, items)});
  return std::make_unique<VkDispatchOp>(be, pipe,
                                        std::vector<uint32_t>{static_cast<uint32_t>(sh[0].c), hw, F, fn, layout},
                                        channelGrid(sh[1], layout, wg, items));
}

}  // namespace sdspeed
