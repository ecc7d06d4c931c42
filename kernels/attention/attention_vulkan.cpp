// The attention family's Vulkan lowering: attention.comp, one module whose specialization
// constant STAGE picks the kernel. flash is one dispatch; naive and
// partially_fused_softmax are three (scores, row statistics, P V) recorded into one
// submission, which the recorder orders with a barrier between dispatches, as OpenCL's
// in-order queue does.
//
// Scratch (the S x L scores and a (max, 1/sum) pair per row): scratchRegions() reports
// their sizes; the graph executor binds regions of its arena (BufferRegion::mem is the
// arena's vk::Buffer), and an op nobody binds (check, bench) allocates them itself as
// backend tensors on its first enqueue, as OpScratch does on OpenCL.
#include <algorithm>
#include <cstring>

#include "kernels/attention/attention_family.h"
#include "kernels/common/half_variant.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"

namespace sdspeed {
namespace {

constexpr uint32_t kBindings = 7;  // q, k, v, mask, out, scores, stats
constexpr uint32_t kPushWords = 8;

using Dispatch = VkMultiDispatchOp::Pass;

}  // namespace

// flash_coopmat_f16, tensor cores (attention_coopmat_vulkan.cpp).
std::unique_ptr<PreparedOp> lowerAttentionCoopMatVulkan(vk::VulkanBackend& be, const VariantDef& v,
                                                        const ParamPoint& p, const AttentionProblem& a,
                                                        const StorageFormat& f);

std::unique_ptr<PreparedOp> lowerAttentionVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                 const ParamPoint& pt, const Problem& prob, const StorageFormat& f) {
  (void)fam;
  const auto* a = dynamic_cast<const AttentionProblem*>(&prob);
  if (!a) throw Error("attention given a problem of another family: " + prob.text());
  if (v.name == AttentionFamily::kCoopMatVariant) return lowerAttentionCoopMatVulkan(be, v, pt, *a, f);
  // The family's unsupportedReason already refused D % 4 != 0 and, for flash, tiles
  // beyond the device's shared memory and wide heads that WG cannot split.
  const uint32_t layout = vulkanLayoutCode(f);
  const auto& module = vulkanModuleFor("attention", f);
  const uint32_t BH = u32(a->batch * a->heads), S = u32(a->queries), L = u32(a->keys), D4 = u32(a->headDim / 4);
  const uint32_t flags = (a->causal ? 1u : 0u) | (a->mask ? 2u : 0u) | (v.name == "naive" ? 4u : 0u) |
                         (v.name == "partially_fused_softmax" ? 8u : 0u);
  const float scale = static_cast<float>(a->effectiveScale());
  uint32_t scaleBits;
  std::memcpy(&scaleBits, &scale, 4);
  std::vector<uint32_t> push = {u32(a->heads), BH, S, L, D4, layout, flags, scaleBits};  // kPushWords
  auto pipeline = [&](uint32_t wg, uint32_t stage, std::vector<vk::SpecConstant> more) -> const vk::ComputePipeline* {
    std::vector<vk::SpecConstant> spec = {vulkanLocalSizeX(be, wg), vk::specU32(1, stage)};
    spec.insert(spec.end(), more.begin(), more.end());
    return &be.pipeline(module, kBindings, kPushWords * 4, spec);
  };

  if (baseVariantName(v) == "flash") {  // flash_f16 too: the afp modules (attention_flash.glsl)
    // GLSL has one exp2, whose precision Vulkan bounds; there is no native_exp2 to pick,
    // so NATIVE=1 would time the same kernel under another label.
    if (pt["NATIVE"] != 0)
      throw UnsupportedError("flash NATIVE=1 has no Vulkan counterpart (GLSL has one exp2); NATIVE=0 runs");
    const uint32_t wg = u32(pt["WG"]), rq = u32(pt["RQ"]);
    std::vector<vk::SpecConstant> spec = {vk::specU32(4, u32(pt["BK"])), vk::specU32(5, rq),
                                          vk::specU32(6, u32(pt["KC"])), vk::specU32(7, D4)};
    uint32_t rowsPerGroup = wg * rq, stage = 3;
    if (D4 > 40) {  // D > 160: the family's kMaxFlashSlices, whole rows in registers up to there
      // Wide heads (the family's rule admits them on Vulkan only): a row split across
      // `parts` invocations, tiles of KC keys, so BK has no part in the kernel.
      if (pt["BK"] != v.defaults()["BK"])
        throw UnsupportedError("flash BK=" + std::to_string(pt["BK"]) + " is the same kernel as BK=" +
                               std::to_string(v.defaults()["BK"]) + " for D > 160 on Vulkan (tiles of KC keys)");
      const uint32_t parts = static_cast<uint32_t>(AttentionFamily::flashWideParts(a->headDim));
      spec.push_back(vk::specU32(8, parts));
      rowsPerGroup = wg / parts * rq;
      stage = 4;
    }
    const auto* pipe = pipeline(wg, stage, spec);
    // flash reads no scratch: the mask (tensor 3) stands in at bindings 5 and 6.
    return std::make_unique<VkMultiDispatchOp>(be, "attention " + v.name, 5,
                                               std::vector<Dispatch>{{pipe, {ceilDiv(S, rowsPerGroup), BH, 1}}},
                                               std::move(push), 2, std::vector<uint64_t>{}, 3);
  }
  if (v.name != "naive" && v.name != "partially_fused_softmax")
    throw UnsupportedError("attention " + v.name + " has no vulkan kernels");
  const uint32_t T = u32(pt["T"]), R = u32(pt["R"]), swg = u32(pt["SWG"]), tile = T * R;
  const std::vector<vk::SpecConstant> tiles = {vk::specU32(2, T), vk::specU32(3, R)};
  const uint32_t rows = BH * S;
  std::vector<Dispatch> d = {
      {pipeline(T * T, 0, tiles), {ceilDiv(L, tile), ceilDiv(S, tile), BH}},
      // A group per score row, laid over x and y: Vulkan guarantees 65535 groups per
      // dimension, and SD 1.5's self-attention has 2 * 8 * 4096 rows.
      {pipeline(swg, 1, {}), {std::min(rows, 65535u), ceilDiv(rows, 65535u), 1}},
      {pipeline(T * T, 2, tiles), {ceilDiv(D4, tile), ceilDiv(S, tile), BH}},
  };
  const std::vector<uint64_t> scratch = {uint64_t{rows} * L * 4, uint64_t{rows} * 8};  // scores, row statistics
  return std::make_unique<VkMultiDispatchOp>(be, "attention " + v.name, 5, std::move(d), std::move(push), 2, scratch, 3);
}

}  // namespace sdspeed
