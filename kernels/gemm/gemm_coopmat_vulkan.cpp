// The Vulkan lowering of gemm coopmat_f16 (kernels/gemm/gemm_coopmat.comp): the point's
// coopmat shape, warp tile, subgroups, K step and double buffering as specialization
// constants with the layout and the staging paths, the problem as gemm.comp's push
// constants but the layout, one dispatch of a work-group per
// BM x BN output tile per sample. SK > 1: SK times the work-groups (grid z = SK * N), each
// over one K range, storing f32 partial sums to a scratch region, then
// gemm_coopmat_reduce.comp (a second dispatch in the same recording) sums them and applies
// the epilogue; the op's time is the first start to the last end, as conv's split-K. Refused in one line where the build's glslc made no
// module (no GL_NV_cooperative_matrix) or the device did not enable the extension; the
// family's device rule (gemm_coopmat.cpp) has already checked the device's shape list.
#include "kernels/gemm/gemm_coopmat_vulkan.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

namespace sdspeed {
namespace {

// x, w, bias, residual, y, and split-K's partial sums (both passes bind the same set).
constexpr uint32_t kBindings = kGemmCoopMatBindings;
// K, F, HW, epi, flags, wrows (0 here: the samples share w); the layout is a specialization
// constant. The reduce pass reads the first five.
constexpr uint32_t kPushWords = kGemmCoopMatPushWords;
// The reduce pass's work-group along the positions (conv_coopmat_vulkan.cpp's: a pass this
// light needs no tuning).
constexpr uint32_t kReduceWg = 64;

using Pass = VkMultiDispatchOp::Pass;

}  // namespace

const vk::ComputePipeline& gemmCoopMatPipeline(vk::VulkanBackend& be, const std::string& module,
                                               const StorageFormat& f, const ParamPoint& p, uint32_t subgroup,
                                               const GemmCoopMatStaging& s) {
  auto u = [&](const char* k) { return static_cast<uint32_t>(p[k]); };
  return be.pipeline(
      vulkanModuleFor(module, f), kGemmCoopMatBindings, kGemmCoopMatPushWords * 4,
      {vulkanLocalSizeX(be, u("SGM") * u("SGN") * subgroup), vk::specU32(1, u("CM")), vk::specU32(2, u("CN")),
       vk::specU32(3, u("CK")), vk::specU32(4, u("WM")), vk::specU32(5, u("WN")), vk::specU32(6, u("SGM")),
       vk::specU32(7, u("SGN")), vk::specU32(8, u("KS")), vk::specU32(9, u("DB")), vk::specU32(10, s.pairs),
       vk::specU32(11, subgroup), vk::specU32(12, s.avec), vk::specU32(13, s.bvec), vk::specU32(14, s.layout),
       vk::specU32(15, s.sk), vk::specU32(16, s.acol), s.weightFormat});
}

std::unique_ptr<PreparedOp> lowerGemmCoopMatVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                   const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  const auto* g = dynamic_cast<const GemmProblem*>(&prob);
  if (!g) throw Error("gemm given a problem of another family: " + prob.text());
  const VulkanCoopMatModule module = vulkanCoopMatModule(
      be, "gemm", v, "gemm_coopmat", [&] { return GemmFamily::coopMatDeviceRule(p, be.caps()); });
  const uint32_t epi = static_cast<uint32_t>(GemmFamily::epilogueCode(g->epilogue));
  const Shape y = g->outShape();
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t flags = (g->bias ? 1u : 0u) | (g->residual ? 2u : 0u);
  std::vector<uint32_t> push{u32(g->x.c), u32(y.c), u32(y.hw()), epi, flags, 0};  // the layout: constant 14
  auto u = [&](const char* k) { return static_cast<uint32_t>(p[k]); };
  // 32: the device rule checked it (the emulation makes its own groups of 32).
  const uint32_t subgroup = module.emulated ? 32u : be.info().subgroupSize;
  const uint32_t bm = u("SGM") * u("WM") * u("CM"), bn = u("SGN") * u("WN") * u("CN");
  // The staging's vector loads (gemm_coopmat.comp: AVEC, BVEC), wherever the layout and the
  // problem keep every quad or chunk whole and aligned; per element otherwise.
  const uint32_t avec = vulkanVectorStaging() && layout == 1u ? 1u : 0u;
  const uint32_t bvec = vulkanWeightChunks(fam, f, g->x.c);
  const uint32_t sk = u32(GemmFamily::coopMatSplitK(p));
  // Output channels in tiles of BN: BN is a multiple of 8, so the tiles also cover
  // NC4HW4's padding channels (C rounded up to 4), which the shader (or, split, the reduce
  // pass) writes as 0.
  const std::array<uint32_t, 3> groups{ceilDiv(y.hw(), bm), ceilDiv(y.c, bn), u32(y.n) * sk};
  vulkanCheckGroupCount(be, "gemm " + v.name, groups);
  const uint32_t pairs = g->epilogue == "geglu" ? 2u : 1u;
  const auto& pipe = gemmCoopMatPipeline(be, module.name, f, p, subgroup,
                                         {pairs, avec, bvec, layout, sk, 0, vulkanWeightFormat(fam, f)});
  std::vector<Pass> passes = {{&pipe, groups}};
  std::vector<uint64_t> scratch;
  if (sk > 1) {
    scratch.push_back(GemmFamily::coopMatSplitKBytes(*g, sk));
    const std::array<uint32_t, 3> reduceGroups = channelGrid(y, layout, kReduceWg, 1);
    vulkanCheckGroupCount(be, "gemm " + v.name + " split-K reduce", reduceGroups);
    const auto& reduce = be.pipeline(vulkanModuleFor("gemm_coopmat_reduce", f), kBindings, kPushWords * 4,
                                     {vulkanLocalSizeX(be, kReduceWg), vk::specU32(1, sk), vk::specU32(2, layout),
                                      vk::specU32(3, pairs), vulkanWeightFormat(fam, f)});
    passes.push_back({&reduce, reduceGroups});
  }
  // Tensors x, w, bias, residual, y; binding 5 the partial sums (SK > 1), else y stands in
  // (SK = 1 never writes them). w and bias are read as uint words.
  return std::make_unique<VkMultiDispatchOp>(be, "gemm " + v.name, 5, std::move(passes), std::move(push), 1,
                                             std::move(scratch), 4, kVkWeightBindings12);
}

}  // namespace sdspeed
