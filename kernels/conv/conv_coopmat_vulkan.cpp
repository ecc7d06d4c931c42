// The Vulkan lowering of conv coopmat_f16 (kernels/conv/conv_coopmat.comp): the point's
// coopmat shape, warp tile, subgroups, K step, double buffering and split-K, and the
// problem's kernel size, stride and pad and the layout as specialization constants;
// conv.comp's push constants but the layout. SK = 1: one dispatch of a work-group per BM positions x BN output channels
// per sample. SK > 1: SK times the work-groups (grid z = SK * N), each over one K range,
// storing f32 partial sums to a scratch region, then conv_coopmat_reduce.comp (a second
// dispatch in the same recording: the recorder's barrier orders them) sums them and
// applies the epilogue; the op's events are both dispatches', so its time is the first
// start to the last end. Refused in one line where the build's glslc made no module (no
// GL_NV_cooperative_matrix) or the device did not enable the extension; the device rule
// has checked the shape list.
#include "kernels/conv/conv_family.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

namespace sdspeed {
namespace {

// x, w, bias, temb, residual, y, and split-K's partial sums (both passes bind the same set).
constexpr uint32_t kBindings = 7;
constexpr uint32_t kPushWords = 7;  // Cin, H, W, Cout, Ho, Wo, flags (the layout: a specialization constant)
// The reduce pass's work-group along the positions: two 32-wide subgroups of consecutive
// positions (coalesced partial reads and NCHW stores); a pass this light needs no tuning.
constexpr uint32_t kReduceWg = 64;

using Pass = VkMultiDispatchOp::Pass;

}  // namespace

std::unique_ptr<PreparedOp> lowerConvCoopMatVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                   const ParamPoint& p, const ConvProblem& c, const StorageFormat& f) {
  const VulkanCoopMatModule module = vulkanCoopMatModule(
      be, "conv", v, "conv_coopmat", [&] { return GemmFamily::coopMatDeviceRule(p, be.caps(), "conv"); });
  const ConvDims& d = c.dims;
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t Ho = u32(d.outHeight()), Wo = u32(d.outWidth()), N = u32(d.batch);
  const uint32_t stored = layout == 1u ? (u32(d.cout) + 3u) / 4u * 4u : u32(d.cout);
  auto u = [&](const char* k) { return static_cast<uint32_t>(p[k]); };
  const uint32_t sk = u32(GemmFamily::coopMatSplitK(p));
  const uint32_t subgroup = module.emulated ? 32u : be.info().subgroupSize;  // 32: the device rule checked it
  const uint32_t bm = u("SGM") * u("WM") * u("CM"), bn = u("SGN") * u("WN") * u("CN");
  const uint32_t bvec = vulkanWeightChunks(fam, f, d.cin * d.kernel * d.kernel);  // conv_coopmat.comp's BVEC
  // Output channels in tiles of BN (a multiple of 8): they also cover NC4HW4's padding
  // channels, which the shader writes as 0 (or, split, the reduce pass does).
  const std::array<uint32_t, 3> groups{ceilDiv(Ho * Wo, bm), ceilDiv(stored, bn), N * sk};
  vulkanCheckGroupCount(be, "conv " + v.name, groups);
  const auto& pipe = be.pipeline(
      vulkanModuleFor(module.name, f), kBindings, kPushWords * 4,
      {vulkanLocalSizeX(be, u("SGM") * u("SGN") * subgroup), vk::specU32(1, u("CM")), vk::specU32(2, u("CN")),
       vk::specU32(3, u("CK")), vk::specU32(4, u("WM")), vk::specU32(5, u("WN")), vk::specU32(6, u("SGM")),
       vk::specU32(7, u("SGN")), vk::specU32(8, u("KS")), vk::specU32(9, u("DB")), vk::specU32(10, subgroup),
       vk::specU32(11, u32(d.kernel)), vk::specU32(12, u32(d.stride)), vk::specU32(13, u32(d.pad)),
       vk::specU32(14, sk), vk::specU32(15, bvec), vk::specU32(16, layout),
       vulkanWeightFormat(fam, f)});
  std::vector<Pass> passes = {{&pipe, groups}};
  uint64_t partBytes = 0;
  if (sk > 1) {
    partBytes = ConvFamily::scratch(v, c, p).output;  // the size the planner was told
    const Shape out = c.outShape();
    const std::array<uint32_t, 3> reduceGroups = channelGrid(out, layout, kReduceWg, 1);
    vulkanCheckGroupCount(be, "conv " + v.name + " split-K reduce", reduceGroups);
    const auto& reduce = be.pipeline(vulkanModuleFor("conv_coopmat_reduce", f), kBindings, kPushWords * 4,
                                     {vulkanLocalSizeX(be, kReduceWg), vk::specU32(1, sk), vk::specU32(2, layout),
                                      vulkanWeightFormat(fam, f)});
    passes.push_back({&reduce, reduceGroups});
  }
  const uint32_t flags = (c.bias ? 1u : 0u) | (c.temb ? 2u : 0u) | (c.residual ? 4u : 0u);
  // Tensors x, w, bias, temb, residual, y; binding 6 the partial sums (SK > 1), else y
  // stands in (SK = 1 never writes them). w and bias are read as uint words.
  return std::make_unique<VkMultiDispatchOp>(
      be, "conv " + v.name, 6, std::move(passes),
      std::vector<uint32_t>{u32(d.cin), u32(d.height), u32(d.width), u32(d.cout), Ho, Wo, flags}, 1,
      partBytes ? std::vector<uint64_t>{partBytes} : std::vector<uint64_t>{}, 5, kVkWeightBindings12);
}

}  // namespace sdspeed
