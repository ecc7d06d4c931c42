#include "pipeline/exec/weight_stream.h"

#include <algorithm>

namespace sdspeed {
namespace {

// In graph order, between ops: correct on any backend, overlapping nothing.
class BlockingWeightStream : public WeightStream {
 public:
  explicit BlockingWeightStream(Backend& backend) : backend_(backend) {}
  void start(size_t, const std::vector<Upload>& uploads) override {
    if (uploads.empty()) return;
    backend_.finish();  // the ops before this one may still read the regions' old contents
    for (const Upload& u : uploads) u.tensor->uploadBytes(u.bytes);
  }
  void waitFor(const std::vector<int>&) override {}  // uploaded synchronously in start()

 private:
  Backend& backend_;
};

}  // namespace

uint64_t weightStreamSlotBytes(const Backend& backend, bool pinnedStaging, uint64_t largest, uint64_t maxSlotBytes) {
  if (!pinnedStaging || backend.api() != "opencl") return 0;
  return std::min(largest, maxSlotBytes);
}

std::unique_ptr<WeightStream> makeWeightStream(Backend& backend, uint64_t slotBytes, size_t tensors) {
  if (backend.api() == "opencl") return makeClWeightStream(backend, slotBytes, tensors);
  return std::make_unique<BlockingWeightStream>(backend);
}

}  // namespace sdspeed
