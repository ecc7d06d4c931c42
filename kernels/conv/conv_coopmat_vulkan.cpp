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
// Tap-major K (conv_coopmat.comp's TAPS) wherever Cin % 8 == 0 (ConvFamily::coopMatTapMajor),
// unless SDSPEED_VK_CONV_CHANNEL_MAJOR=1 (an ablation switch: the gather it replaces, for
// measuring both in one build): the shader reads f16 weight rows in tap-major order, which
// conv_coopmat_weights.comp derives from w. Resident (the default), they are made on the
// first call with a weight tensor and kept per tensor (VkDerivedWeights); that dispatch's
// event is dropped, so the op's time is the per-inference work, as Winograd's. Per call
// (the executor's memory modes), they are made into a scratch region at every call, timed.
#include <optional>

#include "kernels/conv/conv_family.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/vulkan/derived_weights.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

namespace sdspeed {
namespace {

// x, w, bias, temb, residual, y, split-K's partial sums, the tap-major weight rows (every
// pass binds the same set).
constexpr uint32_t kBindings = 8;
constexpr uint32_t kPushWords = 7;  // Cin, H, W, Cout, Ho, Wo, flags (the layout: a specialization constant)
// The reduce pass's work-group along the positions: two 32-wide subgroups of consecutive
// positions (coalesced partial reads and NCHW stores); a pass this light needs no tuning.
constexpr uint32_t kReduceWg = 64;
// The weight rows' pass: an invocation per 8-half chunk, 64 chunks of one row per group.
constexpr uint32_t kWeightsWg = 64;

using Pass = VkMultiDispatchOp::Pass;

class VkConvCoopMatOp : public PreparedOp {
 public:
  // rows: the tap-major rows' pass and their bytes (none: channel-major K, w read as it
  // is); partBytes: split-K's partial sums (0: single pass).
  VkConvCoopMatOp(vk::VulkanBackend& be, std::string what, std::vector<Pass> passes, std::optional<Pass> rows,
                  uint64_t rowBytes, std::vector<uint32_t> push, uint64_t partBytes)
      : be_(be), what_(std::move(what)), passes_(std::move(passes)), rows_(rows), push_(std::move(push)),
        partBytes_(partBytes), derived_(be, rows ? rowBytes : 0) {}

  std::vector<uint64_t> scratchRegions() const override {
    std::vector<uint64_t> r;
    if (partBytes_) r.push_back(partBytes_);
    if (perCall_) r.push_back(derived_.bytes());
    return r;
  }
  void bindScratch(const std::vector<BufferRegion>& regions) override {
    scratch_.bind(what_, regions, scratchRegions());
  }
  uint64_t derivedWeightBytes() const override { return derived_.bytes(); }
  void setDerivedWeightsPerCall(bool perCall) override {
    if (perCall && !derived_.bytes()) throw Error("this op derives no weights");
    perCall_ = perCall;
    derived_.clear();
    scratch_.clear();
  }
  bool derivedWeightsPerCall() const override { return perCall_; }

  OpEvents enqueue(const std::vector<DeviceTensor*>& t) override {
    if (t.size() != 6) throw Error(what_ + " takes 6 tensors, got " + std::to_string(t.size()));
    std::vector<vk::BufferRange> buffers;
    for (DeviceTensor* x : t) buffers.push_back(vk::asVk(*x).range());
    for (size_t i : {1, 2}) vulkanCheckWordBinding(i, *t[i], buffers[i]);  // w and bias are read as uint words
    const auto sizes = scratchRegions();
    auto region = [&](size_t i) { return scratch_.at(be_, sizes, i); };
    // Binding 6: the partial sums, else y stands in (SK = 1 never writes them); binding 7:
    // the weight rows, else w stands in (channel-major never reads them).
    buffers.push_back(partBytes_ ? region(0) : buffers[5]);
    bool fresh = false;
    if (!derived_.bytes())
      buffers.push_back(buffers[1]);
    else  // before recording: a cache entry dropped here frees a buffer, which runs the batch
      buffers.push_back(perCall_ ? region(sizes.size() - 1) : derived_.get(*t[1], fresh));
    auto& rec = be_.recorder();
    rec.begin();
    auto dispatch = [&](const Pass& p) {
      rec.dispatch(*p.pipeline, buffers, push_.data(), push_.size() * 4, p.groups[0], p.groups[1], p.groups[2]);
    };
    if (derived_.bytes() && (perCall_ || fresh)) dispatch(*rows_);
    for (const Pass& p : passes_) dispatch(p);
    OpEvents events = vk::eventsOf(rec.submit());
    if (fresh && !perCall_) events.erase(events.begin());  // the resident rows: a one-time cost, not timed
    return events;
  }

 private:
  vk::VulkanBackend& be_;
  std::string what_;
  std::vector<Pass> passes_;
  std::optional<Pass> rows_;
  std::vector<uint32_t> push_;
  uint64_t partBytes_;
  VkDerivedWeights derived_;
  bool perCall_ = false;
  VkOpScratch scratch_;  // the partial sums, per call the rows: bound, else own
};

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
  const uint32_t K = u32(d.cin * d.kernel * d.kernel);
  const ConvScratch s = ConvFamily::scratch(v, c, p);
  const bool taps = s.weights > 0 && !vulkanSwitch("SDSPEED_VK_CONV_CHANNEL_MAJOR");
  const uint32_t bvec = taps ? 0u : vulkanWeightChunks(fam, f, K);  // conv_coopmat.comp's BVEC
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
       vk::specU32(14, sk), vk::specU32(15, bvec), vk::specU32(16, layout), vk::specU32(17, taps ? 1u : 0u),
       vulkanWeightFormat(fam, f)});
  std::vector<Pass> passes = {{&pipe, groups}};
  if (sk > 1) {
    const std::array<uint32_t, 3> reduceGroups = channelGrid(c.outShape(), layout, kReduceWg, 1);
    vulkanCheckGroupCount(be, "conv " + v.name + " split-K reduce", reduceGroups);
    const auto& reduce = be.pipeline(vulkanModuleFor("conv_coopmat_reduce", f), kBindings, kPushWords * 4,
                                     {vulkanLocalSizeX(be, kReduceWg), vk::specU32(1, sk), vk::specU32(2, layout),
                                      vulkanWeightFormat(fam, f)});
    passes.push_back({&reduce, reduceGroups});
  }
  std::optional<Pass> rows;
  if (taps) {
    const std::array<uint32_t, 3> rowGroups{ceilDiv(K / 8, kWeightsWg), u32(d.cout), 1};
    vulkanCheckGroupCount(be, "conv " + v.name + " weight rows", rowGroups);
    rows = Pass{&be.pipeline(vulkanModuleFor("conv_coopmat_weights", f), kBindings, kPushWords * 4,
                             {vulkanLocalSizeX(be, kWeightsWg), vk::specU32(1, u32(d.kernel)), vulkanWeightFormat(fam, f)}),
                rowGroups};
  }
  const uint32_t flags = (c.bias ? 1u : 0u) | (c.temb ? 2u : 0u) | (c.residual ? 4u : 0u);
  return std::make_unique<VkConvCoopMatOp>(
      be, "conv " + v.name, std::move(passes), rows, s.weights,
      std::vector<uint32_t>{u32(d.cin), u32(d.height), u32(d.width), u32(d.cout), Ho, Wo, flags}, s.output);
}

}  // namespace sdspeed
