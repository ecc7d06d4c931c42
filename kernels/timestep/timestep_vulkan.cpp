// The timestep family's Vulkan lowering: timestep.comp, one dispatch, an invocation per
// (stored channel, sample). t is a host input, always f32 (slotFormat).
#include "kernels/common/elementwise.h"
#include "kernels/timestep/timestep_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

#include <cstring>

namespace sdspeed {

std::unique_ptr<PreparedOp> lowerTimestepVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  (void)v;
  const auto& e = asShapeAttr(prob, fam.name());
  const Shape y = fam.shapes(prob).back();
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t wg = static_cast<uint32_t>(p["WG"]), C = static_cast<uint32_t>(y.c);
  const uint32_t stored = layout == 1u ? (C + 3u) / 4u * 4u : C;
  const float shift = static_cast<float>(std::stod(e.attrs.at("freq_shift")));
  uint32_t shiftBits;
  std::memcpy(&shiftBits, &shift, 4);
  const uint32_t flip = e.attrs.at("flip_sin_to_cos") == "1" ? 1u : 0u;
  const auto& pipe = be.pipeline(vulkanModuleFor("timestep", f), 2, 4 * 4, {vulkanLocalSizeX(be, wg)});
  return std::make_unique<VkDispatchOp>(be, pipe, std::vector<uint32_t>{C, layout, shiftBits, flip},
                                        std::array<uint32_t, 3>{(stored + wg - 1) / wg, static_cast<uint32_t>(y.n), 1});
}

}  // namespace sdspeed
