// The embedding family's Vulkan lowering: embedding.comp, one dispatch after the token
// ids are checked on the host (as the OpenCL op does: the gather has no bounds check).
#include "kernels/common/elementwise.h"
#include "kernels/embedding/embedding_family.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "reference/elementwise.h"
#include "runtime/error.h"

namespace sdspeed {
namespace {

class VkEmbeddingOp : public PreparedOp {
 public:
  VkEmbeddingOp(std::unique_ptr<PreparedOp> gather, int64_t vocab) : gather_(std::move(gather)), vocab_(vocab) {}
  OpEvents enqueue(const std::vector<DeviceTensor*>& tensors) override {
    checkTokenIds(tensors.at(0)->download(), vocab_);
    return gather_->enqueue(tensors);
  }

 private:
  std::unique_ptr<PreparedOp> gather_;
  int64_t vocab_;
};

}  // namespace

std::unique_ptr<PreparedOp> lowerEmbeddingVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                 const ParamPoint& p, const Problem& prob, const StorageFormat& f) {
  (void)v;
  if (fam.keyFormat(f).weights != DType::F32)
    throw UnsupportedError(std::string("embedding on Vulkan reads f32 tables only, not ") +
                           dtypeName(fam.keyFormat(f).weights));
  const auto sh = fam.shapes(prob);
  const Shape& y = sh.back();
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t wg = static_cast<uint32_t>(p["WG"]), items = static_cast<uint32_t>(p["ITEMS"]);
  const auto& pipe =
      be.pipeline(vulkanModuleFor("embedding", f), 4, 3 * 4, {vulkanLocalSizeX(be, wg), vk::specU32(1, items)});
  auto gather = std::make_unique<VkDispatchOp>(
      be, pipe, std::vector<uint32_t>{static_cast<uint32_t>(y.c), static_cast<uint32_t>(y.hw()), layout},
      channelGrid(y, layout, wg, items));
  return std::make_unique<VkEmbeddingOp>(std::move(gather), sh[1].n);
}

}  // namespace sdspeed
