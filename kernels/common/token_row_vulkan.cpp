// The token-row families' Vulkan lowering (softmax, layernorm): token_row.comp, one
// dispatch; the variant (per_item, cooperative or split) is a specialization constant.
#include "kernels/common/token_row_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

#include <algorithm>
#include <cstring>


namespace sdspeed {

std::unique_ptr<PreparedOp> lowerTokenRowVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  const auto* rp = dynamic_cast<const TokenRowProblem*>(&prob);
  if (!rp || rp->family != fam.name()) throw Error(fam.name() + " given a problem of another family: " + prob.text());
  const bool layerNorm = fam.name() == "layernorm";
  const uint32_t layout = vulkanLayoutCode(f);
  const std::string base = baseVariantName(v);
  const bool coop = base == "cooperative", split = base == "split";
  // split: TX tokens along x, PARTS along y (the shader's local_size_y_id 2).
  const uint32_t wg = static_cast<uint32_t>(split ? p["TX"] : p["WG"]);
  const uint32_t parts = split ? static_cast<uint32_t>(p["PARTS"]) : 1u;
  if (split && parts > be.info().maxWorkGroupSize[1])
    throw UnsupportedError("PARTS " + std::to_string(parts) + " exceeds the device's maxComputeWorkGroupSize[1] " +
                           std::to_string(be.info().maxWorkGroupSize[1]));
  std::vector<vk::SpecConstant> spec{vulkanLocalSizeX(be, wg), vk::specU32(1, split ? 2u : coop ? 1u : 0u),
                                     vk::specU32(2, parts)};
  // LayerNorm's gamma and beta are read in f32 or f16 (weights.glsl; f16 under int8/int4:
  // keyFormat), specialization constant 20.
  if (layerNorm) spec.push_back(vulkanWeightFormat(fam, f));
  const Shape& s = rp->dims;
  const uint32_t N = static_cast<uint32_t>(s.n), C = static_cast<uint32_t>(s.c), HW = static_cast<uint32_t>(s.hw());
  const auto& pipe = be.pipeline(vulkanModuleFor(fam.name(), f), layerNorm ? 4 : 2, 5 * 4, spec);
  float attr = static_cast<float>(rp->attr);
  uint32_t attrBits;
  std::memcpy(&attrBits, &attr, 4);
  const std::array<uint32_t, 3> groups =
      // Cooperative: a work-group per row, the rows laid over x and y, since Vulkan only
      // guarantees 65535 groups per dimension (SD 1.5's self-attention softmax has 65536).
      coop    ? std::array<uint32_t, 3>{std::min(N * HW, 65535u), (N * HW + 65534u) / 65535u, 1}
      : split ? std::array<uint32_t, 3>{(HW + wg - 1) / wg, 1, N}
              : std::array<uint32_t, 3>{(HW + wg - 1) / wg, N, 1};
  vulkanCheckGroupCount(be, fam.name() + " " + v.name, groups);
  return std::make_unique<VkDispatchOp>(be, pipe, std::vector<uint32_t>{N, C, HW, layout, attrBits}, groups,
                                        layerNorm ? kVkWeightBindings12 : 0u);
}

}  // namespace sdspeed
