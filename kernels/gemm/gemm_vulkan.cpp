// GEMM's Vulkan lowering: gemm.comp, the direct variant and its half twin (one dispatch).
// tiled has no Vulkan kernel yet (refused in one line); w and bias are read as f32, so
// f16 and quantized weights are refused on Vulkan too, visibly.
#include "kernels/gemm/gemm_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

namespace sdspeed {

std::unique_ptr<PreparedOp> lowerGemmVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                            const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  if (baseVariantName(v) != "direct") throw UnsupportedError("gemm " + v.name + " has no vulkan kernels (direct has)");
  if (fam.keyFormat(f).weights != DType::F32)
    throw UnsupportedError(std::string("gemm on Vulkan reads f32 weights only, not ") +
                           dtypeName(fam.keyFormat(f).weights));
  const auto* g = dynamic_cast<const GemmProblem*>(&prob);
  if (!g) throw Error("gemm given a problem of another family: " + prob.text());
  const uint32_t epi = static_cast<uint32_t>(GemmFamily::epilogueCode(g->epilogue));
  const Shape y = g->outShape();
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t wg = static_cast<uint32_t>(p["WG"]), items = 1;
  const uint32_t hk = v.param("HK") ? static_cast<uint32_t>(p["HK"]) : 4u;
  const auto& pipe = be.pipeline(vulkanModuleFor("gemm", f), 5, 6 * 4,
                                 {vulkanLocalSizeX(be, wg), vk::specU32(1, items), vk::specU32(2, hk)});
  const uint32_t flags = (g->bias ? 1u : 0u) | (g->residual ? 2u : 0u);
  return std::make_unique<VkDispatchOp>(
      be, pipe,
      std::vector<uint32_t>{static_cast<uint32_t>(g->x.c), static_cast<uint32_t>(y.c), static_cast<uint32_t>(y.hw()),
                            epi, flags, layout},
      channelGrid(y, layout, wg, items));
}

}  // namespace sdspeed
