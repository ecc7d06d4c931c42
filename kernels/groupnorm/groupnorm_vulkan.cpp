// GroupNorm's Vulkan lowering: groupnorm.comp, the one_pass variant (a work-group per
// (sample, group); WG, VEC and CACHE as specialization constants). two_pass and split
// have no Vulkan kernels yet: refused with one line, as a family without any is.
#include <cstring>

#include "kernels/groupnorm/groupnorm_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"


namespace sdspeed {

std::unique_ptr<PreparedOp> lowerGroupNormVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                 const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  if (baseVariantName(v) != "one_pass")
    throw UnsupportedError("groupnorm " + v.name + " has no vulkan kernels (one_pass has)");
  const auto* gp = dynamic_cast<const GroupNormProblem*>(&prob);
  if (!gp) throw Error("groupnorm given a problem of another family: " + prob.text());
  const Shape& s = gp->dims;
  const uint32_t layout = vulkanLayoutCode(f);
  const auto& pipe = be.pipeline(vulkanModuleFor("groupnorm", f), 5, 6 * 4,
                                 {vulkanLocalSizeX(be, static_cast<uint32_t>(p["WG"])),
                                  vk::specU32(1, static_cast<uint32_t>(p["VEC"])),
                                  vk::specU32(2, static_cast<uint32_t>(p["CACHE"])),
                                  vulkanWeightFormat(fam, f)});  // gamma, beta: f32 or f16
  const float eps = static_cast<float>(gp->attrs.eps);
  uint32_t epsBits;
  std::memcpy(&epsBits, &eps, 4);
  const uint32_t flags = (gp->attrs.silu ? 1u : 0u) | (gp->attrs.residual ? 2u : 0u);
  const uint32_t G = static_cast<uint32_t>(gp->attrs.groups);
  return std::make_unique<VkDispatchOp>(
      be, pipe,
      std::vector<uint32_t>{static_cast<uint32_t>(s.c), static_cast<uint32_t>(s.hw()), G, flags, layout, epsBits},
      std::array<uint32_t, 3>{static_cast<uint32_t>(s.n) * G, 1, 1}, kVkWeightBindings12);
}

}  // namespace sdspeed
