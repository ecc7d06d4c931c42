// Streaming weights into the activation arena before the ops that read them, when a
// --memory-budget needs it (GraphExecutor::fitBudget): the executor decides what streams
// and when; a WeightStream moves the bytes. How depends on the API:
//   - OpenCL (cl_weight_stream.cpp): uploads on a second in-order queue that overlap the
//     kernels, through a ring of pinned staging buffers, each reader waiting for its
//     upload's event;
//   - any other backend (blocking, below): uploads in graph order between ops, after
//     the ops enqueued so far have finished (Vulkan's ops are synchronous anyway).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "runtime/backend.h"

namespace sdspeed {

class WeightStream {
 public:
  struct Upload {
    int id;                          // the graph tensor
    DeviceTensor* tensor;            // its place in the arena
    std::span<const uint8_t> bytes;  // packed, on the host
  };
  virtual ~WeightStream() = default;
  // Before op `node` is enqueued: uploads whose region is free once every op enqueued so
  // far has finished (the plan keeps it apart from everything alive at `node`).
  virtual void start(size_t node, const std::vector<Upload>& uploads) = 0;
  // Before op `node` is enqueued: it reads these tensors, so their uploads must be done.
  virtual void waitFor(const std::vector<int>& ids) = 0;
  // Host-visible device memory the stream holds (OpenCL's staging ring), for the footprint.
  virtual uint64_t stagingBytes() const { return 0; }
};

// The ring's slot size when weights of at most `largest` bytes stream through `backend`
// with pinned staging (0: no ring; only OpenCL has one).
uint64_t weightStreamSlotBytes(const Backend& backend, bool pinnedStaging, uint64_t largest, uint64_t maxSlotBytes);
constexpr int kWeightStreamSlots = 3;
// The stream for `backend`; slotBytes from weightStreamSlotBytes (0: no ring).
std::unique_ptr<WeightStream> makeWeightStream(Backend& backend, uint64_t slotBytes, size_t tensors);

// OpenCL's (cl_weight_stream.cpp).
std::unique_ptr<WeightStream> makeClWeightStream(Backend& backend, uint64_t slotBytes, size_t tensors);

}  // namespace sdspeed
