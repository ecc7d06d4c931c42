// GEMM's Vulkan lowering: gemm.comp (the direct variant and its half twin),
// gemm_tiled.comp (the tiled variant, the tuner's parameters as specialization
// constants) and gemm_gemv.comp (gemv, for a few positions), one dispatch each. w is read
// in the op's weight format (f32, f16, q8_0, q4_0) and bias in f32 or f16, decoded from
// uint words (kernels/common/weights.glsl, specialization constant 20).
#include "kernels/gemm/gemm_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

namespace sdspeed {

// coopmat_f16, tensor cores (gemm_coopmat_vulkan.cpp).
std::unique_ptr<PreparedOp> lowerGemmCoopMatVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                   const ParamPoint& p, const Problem& prob, const StorageFormat& f);

std::unique_ptr<PreparedOp> lowerGemmVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                            const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  if (v.name == GemmFamily::kCoopMatVariant) return lowerGemmCoopMatVulkan(be, fam, v, p, prob, f);
  const std::string base = baseVariantName(v);
  if (base != "direct" && base != "tiled" && base != "gemv")
    throw UnsupportedError("gemm " + v.name + " has no vulkan kernels (direct, tiled, gemv and coopmat_f16 have)");
  const auto* g = dynamic_cast<const GemmProblem*>(&prob);
  if (!g) throw Error("gemm given a problem of another family: " + prob.text());
  const uint32_t epi = static_cast<uint32_t>(GemmFamily::epilogueCode(g->epilogue));
  const Shape y = g->outShape();
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t flags = (g->bias ? 1u : 0u) | (g->residual ? 2u : 0u);
  std::vector<uint32_t> push{static_cast<uint32_t>(g->x.c), static_cast<uint32_t>(y.c), static_cast<uint32_t>(y.hw()),
                             epi, flags, layout};
  if (base == "tiled") {
    auto u = [&](const char* k) { return static_cast<uint32_t>(p[k]); };
    const uint32_t wg = (u("MWG") / u("MWI")) * (u("NWG") / u("NWI"));
    const auto& pipe = be.pipeline(
        vulkanModuleFor("gemm_tiled", f), 5, 6 * 4,
        {vulkanLocalSizeX(be, wg), vk::specU32(1, u("MWG")), vk::specU32(2, u("NWG")), vk::specU32(3, u("KWG")),
         vk::specU32(4, u("MWI")), vk::specU32(5, u("NWI")), vk::specU32(6, u("SB")),
         vk::specU32(7, g->epilogue == "geglu" ? 2u : 1u), vk::specU32(8, u("PF")),
         vulkanWeightFormat(fam, f)});
    return std::make_unique<VkDispatchOp>(
        be, pipe, std::move(push),
        std::array<uint32_t, 3>{ceilDiv(y.hw(), u("MWG")), ceilDiv(y.c, u("NWG")), u32(y.n)}, kVkWeightBindings12);
  }
  if (base == "gemv") {
    // A work-group per (4 output channels, position, sample); f16 weights of K % 8 == 0
    // are read a chunk of 8 at a time (WVEC: 16-byte aligned, as coopmat_f16's BVEC).
    const uint32_t wg = static_cast<uint32_t>(p["WG"]);
    const uint32_t wvec = vulkanWeightChunks(fam, f, g->x.c);
    const auto& pipe = be.pipeline(vulkanModuleFor("gemm_gemv", f), 5, 6 * 4,
                                   {vulkanLocalSizeX(be, wg), vk::specU32(1, g->epilogue == "geglu" ? 2u : 1u),
                                    vk::specU32(2, wvec), vulkanWeightFormat(fam, f)});
    return std::make_unique<VkDispatchOp>(be, pipe, std::move(push),
                                          std::array<uint32_t, 3>{ceilDiv(y.c, 4), u32(y.hw()), u32(y.n)},
                                          kVkWeightBindings12);
  }
  const uint32_t wg = static_cast<uint32_t>(p["WG"]), items = 1;
  const uint32_t hk = v.param("HK") ? static_cast<uint32_t>(p["HK"]) : 4u;
  const auto& pipe = be.pipeline(vulkanModuleFor("gemm", f), 5, 6 * 4,
                                 {vulkanLocalSizeX(be, wg), vk::specU32(1, items), vk::specU32(2, hk),
                                  vulkanWeightFormat(fam, f)});
  return std::make_unique<VkDispatchOp>(be, pipe, std::move(push), channelGrid(y, layout, wg, items),
                                        kVkWeightBindings12);
}

}  // namespace sdspeed
