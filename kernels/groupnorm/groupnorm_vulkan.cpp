// GroupNorm's Vulkan lowering. one_pass (and one_pass_f16): groupnorm.comp, a work-group per
// (sample, group); WG, VEC and CACHE as specialization constants. two_pass (and
// two_pass_f16): groupnorm_two_pass.comp, a statistics dispatch of SPLIT work-groups per
// (sample, group) into float partial sums (the op's scratch region, N * G * SPLIT * 2
// floats, as OpenCL's two_pass declares), then a normalize dispatch over every stored
// element; one recording, so the op's time is the first start to the last end. split
// (co-resident work-groups that wait for each other) has no Vulkan kernels: refused with
// one line, as a family without any is.
#include <cstring>

#include "kernels/groupnorm/groupnorm_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"


namespace sdspeed {

std::unique_ptr<PreparedOp> lowerGroupNormVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                 const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  const std::string base = baseVariantName(v);
  if (base != "one_pass" && base != "two_pass")
    throw UnsupportedError("groupnorm " + v.name + " has no vulkan kernels (one_pass and two_pass have)");
  const auto* gp = dynamic_cast<const GroupNormProblem*>(&prob);
  if (!gp) throw Error("groupnorm given a problem of another family: " + prob.text());
  const Shape& s = gp->dims;
  const uint32_t layout = vulkanLayoutCode(f);
  const float eps = static_cast<float>(gp->attrs.eps);
  uint32_t epsBits;
  std::memcpy(&epsBits, &eps, 4);
  const uint32_t flags = (gp->attrs.silu ? 1u : 0u) | (gp->attrs.residual ? 2u : 0u);
  const uint32_t G = static_cast<uint32_t>(gp->attrs.groups), N = static_cast<uint32_t>(s.n);
  std::vector<uint32_t> push{static_cast<uint32_t>(s.c), static_cast<uint32_t>(s.hw()), G, flags, layout, epsBits};
  auto u = [&](const char* k) { return static_cast<uint32_t>(p[k]); };
  if (base == "two_pass") {
    const auto& module = vulkanModuleFor("groupnorm_two_pass", f);
    // NC4HW4: whole slices, one vector access each (QUADS, groupnorm_two_pass.comp);
    // SDSPEED_VK_GN_PER_ELEMENT=1 turns it off (an A/B switch).
    const uint32_t quads = layout == 1u && !vulkanSwitch("SDSPEED_VK_GN_PER_ELEMENT") ? 1u : 0u;
    auto pipeline = [&](uint32_t stage, uint32_t wg) {
      return &be.pipeline(module, 6, 6 * 4,
                          {vulkanLocalSizeX(be, wg), vk::specU32(1, u("VEC")), vk::specU32(2, u("SPLIT")),
                           vk::specU32(3, stage), vk::specU32(4, quads),
                           vulkanWeightFormat(fam, f)});  // gamma, beta: f32 or f16
    };
    const std::array<uint32_t, 3> statsGroups{u("SPLIT"), N * G, 1};
    // QUADS: an invocation per (slice, position); else per stored element.
    const std::array<uint32_t, 3> normGroups =
        quads ? std::array<uint32_t, 3>{(static_cast<uint32_t>(s.hw()) + u("NWG") - 1) / u("NWG"),
                                        static_cast<uint32_t>((s.c + 3) / 4), N}
              : channelGrid(s, layout, u("NWG"), 1);
    vulkanCheckGroupCount(be, "groupnorm " + v.name, statsGroups);
    vulkanCheckGroupCount(be, "groupnorm " + v.name, normGroups);
    const uint64_t partials = uint64_t{N} * G * u("SPLIT") * 2 * sizeof(float);
    // x, gamma, beta, res, y; binding 5 the partial sums.
    return std::make_unique<VkMultiDispatchOp>(
        be, "groupnorm " + v.name, 5,
        std::vector<VkMultiDispatchOp::Pass>{{pipeline(0, u("WG")), statsGroups}, {pipeline(1, u("NWG")), normGroups}},
        push, 1, std::vector<uint64_t>{partials}, 0, kVkWeightBindings12);
  }
  const auto& pipe = be.pipeline(vulkanModuleFor("groupnorm", f), 5, 6 * 4,
                                 {vulkanLocalSizeX(be, u("WG")), vk::specU32(1, u("VEC")), vk::specU32(2, u("CACHE")),
                                  vulkanWeightFormat(fam, f)});  // gamma, beta: f32 or f16
  return std::make_unique<VkDispatchOp>(be, pipe, push, std::array<uint32_t, 3>{N * G, 1, 1}, kVkWeightBindings12);
}

}  // namespace sdspeed
