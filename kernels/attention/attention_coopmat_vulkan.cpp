// The Vulkan lowering of attention flash_coopmat_f16 (attention_coopmat.comp): the point's
// coopmat shape, subgroups, key block, Q K^T step, O columns and RT as specialization
// constants (and the head rounded up to CK, and the layout), attention.comp's push constants, one dispatch of a work-group per BR query
// rows x DO columns of O per (batch, head). Refused in one line where the build's glslc
// made no module (no GL_NV_cooperative_matrix) or the device did not enable the
// extension; the family's device rule has already checked the device's shape list.
#include <cstring>

#include "kernels/attention/attention_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

namespace sdspeed {

std::unique_ptr<PreparedOp> lowerAttentionCoopMatVulkan(vk::VulkanBackend& be, const VariantDef& v,
                                                        const ParamPoint& p, const AttentionProblem& a,
                                                        const StorageFormat& f) {
  const VulkanCoopMatModule module = vulkanCoopMatModule(
      be, "attention", v, "attention_coopmat", [&] { return AttentionFamily::coopMatDeviceRule(p, be.caps()); });
  const uint32_t BH = u32(a.batch * a.heads), S = u32(a.queries), D = u32(a.headDim);
  const uint32_t flags = (a.causal ? 1u : 0u) | (a.mask ? 2u : 0u);
  const float scale = static_cast<float>(a.effectiveScale());
  uint32_t scaleBits;
  std::memcpy(&scaleBits, &scale, 4);
  // attention.comp's push constants (the same Push block).
  std::vector<uint32_t> push = {u32(a.heads), BH, S, u32(a.keys), D / 4, vulkanLayoutCode(f), flags, scaleBits};
  auto u = [&](const char* k) { return static_cast<uint32_t>(p[k]); };
  const uint32_t cols = static_cast<uint32_t>(AttentionFamily::coopMatColumns(p, a.headDim));
  const uint32_t br = u("SG") * u("CM");
  // Bindings: q, k, v, mask, out (attention.comp's first five; no scratch).
  const auto& pipe = be.pipeline(
      vulkanModuleFor(module.name, f), 5, 8 * 4,
      {vulkanLocalSizeX(be, u("SG") * 32u), vk::specU32(1, u("CM")), vk::specU32(2, u("CN")), vk::specU32(3, u("CK")),
       vk::specU32(4, u("SG")), vk::specU32(5, u("BC")), vk::specU32(6, u("DC")), vk::specU32(7, cols),
       vk::specU32(8, ceilDiv(D, u("CK")) * u("CK")), vk::specU32(9, u("RT")),
       vk::specU32(10, vulkanLayoutCode(f))});
  return std::make_unique<VkDispatchOp>(be, pipe, std::move(push),
                                        std::array<uint32_t, 3>{ceilDiv(S, br), ceilDiv(D, cols), BH});
}

}  // namespace sdspeed
