// OpenCL's weight stream (weight_stream.h): uploads on the context's copy queue,
// overlapping the kernels on its main queue.
#include <algorithm>
#include <cstring>
#include <thread>

#include "pipeline/exec/weight_stream.h"
#include "runtime/error.h"
#include "runtime/opencl/cl_error.h"
#include "runtime/opencl/context.h"
#include "runtime/opencl/tensor.h"

namespace sdspeed {
namespace {

// memcpy by several threads: one host thread copies ~5-10 GB/s, too slow to keep up
// with a PCIe DMA (and with the kernels) when a gigabyte streams per UNet call.
void parallelCopy(uint8_t* dst, const uint8_t* src, size_t bytes) {
  const size_t threads = bytes < (4u << 20) ? 1 : std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
  const size_t part = (bytes + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) {
    const size_t at = t * part;
    if (at < bytes) pool.emplace_back([=] { std::memcpy(dst + at, src + at, std::min(part, bytes - at)); });
  }
  std::memcpy(dst, src, std::min(part, bytes));
  for (auto& th : pool) th.join();
}

class ClWeightStream : public WeightStream {
 public:
  ClWeightStream(Context& ctx, uint64_t slotBytes, size_t tensors) : ctx_(ctx), uploadDone_(tensors) {
    if (slotBytes)
      for (int k = 0; k < kWeightStreamSlots; ++k) ring_.push_back(std::make_unique<Context::HostStaging>(ctx_, slotBytes));
    ringBusy_.resize(ring_.size());
  }
  ~ClWeightStream() override {
    // Unmapped while the context's queues are idle.
    try {
      ctx_.finish();
    } catch (const std::exception&) {
    }
    uploadDone_.clear();
    ringBusy_.clear();
    ring_.clear();
  }
  uint64_t stagingBytes() const override { return ring_.empty() ? 0 : ring_.size() * ring_.front()->size(); }

  // On the copy queue, after every op before `node` has finished (a marker behind them;
  // none for node 0, when the queue is idle), so each upload overlaps `node`'s kernels.
  // Through the ring: each chunk waits for its slot's last upload, is copied into it on
  // the host and uploaded from it; the host thread runs ahead of the device by at most
  // the ring.
  void start(size_t node, const std::vector<Upload>& uploads) override {
    if (uploads.empty()) return;
    ClEvent marker;
    if (node > 0) {
      cl_event m = nullptr;
      clCheck(clEnqueueMarkerWithWaitList(ctx_.queue(), 0, nullptr, &m), "clEnqueueMarkerWithWaitList");
      marker = ClEvent(m);
      clCheck(clFlush(ctx_.queue()), "clFlush");
    }
    cl_event opBefore = marker.get();
    cl_command_queue q = ctx_.copyQueue();
    for (const Upload& u : uploads) {
      const auto& bytes = u.bytes;
      const ClTensor& t = asCl(*u.tensor);
      cl_event done = nullptr;
      if (ring_.empty()) {
        clCheck(clEnqueueWriteBuffer(q, t.mem(), CL_FALSE, t.offsetBytes(), bytes.size(), bytes.data(), opBefore ? 1 : 0,
                                     opBefore ? &opBefore : nullptr, &done),
                "clEnqueueWriteBuffer (weight stream)");
      } else {
        const size_t slotBytes = ring_.front()->size();
        for (size_t at = 0; at < bytes.size(); at += slotBytes) {
          const size_t k = ringNext_++ % ring_.size();
          if (ringBusy_[k]) {
            cl_event e = ringBusy_[k].get();
            clCheck(clWaitForEvents(1, &e), "clWaitForEvents (staging slot)");
          }
          const size_t n = std::min(slotBytes, bytes.size() - at);
          parallelCopy(ring_[k]->data(), bytes.data() + at, n);
          if (done) clReleaseEvent(done);
          done = nullptr;
          clCheck(clEnqueueWriteBuffer(q, t.mem(), CL_FALSE, t.offsetBytes() + at, n, ring_[k]->data(), opBefore ? 1 : 0,
                                       opBefore ? &opBefore : nullptr, &done),
                  "clEnqueueWriteBuffer (weight stream)");
          clCheck(clRetainEvent(done), "clRetainEvent");
          ringBusy_[k] = ClEvent(done);
          clCheck(clFlush(q), "clFlush (copy queue)");  // its event is waited for on the host
        }
      }
      uploadDone_.at(static_cast<size_t>(u.id)) = ClEvent(done);
    }
    clCheck(clFlush(q), "clFlush (copy queue)");
  }

  void waitFor(const std::vector<int>& ids) override {
    for (int id : ids) {
      cl_event e = uploadDone_.at(static_cast<size_t>(id)).get();
      clCheck(clEnqueueBarrierWithWaitList(ctx_.queue(), 1, &e, nullptr), "clEnqueueBarrierWithWaitList");
    }
  }

 private:
  Context& ctx_;
  // The pinned staging ring (ExecOptions::pinnedStaging): slots used in turn, each busy
  // until the upload reading it has finished.
  std::vector<std::unique_ptr<Context::HostStaging>> ring_;
  std::vector<ClEvent> ringBusy_;
  size_t ringNext_ = 0;
  std::vector<ClEvent> uploadDone_;  // by tensor id
};

}  // namespace

std::unique_ptr<WeightStream> makeClWeightStream(Backend& backend, uint64_t slotBytes, size_t tensors) {
  auto* ctx = dynamic_cast<Context*>(&backend);
  if (!ctx) throw Error("an OpenCL weight stream for a " + backend.api() + " backend");
  return std::make_unique<ClWeightStream>(*ctx, slotBytes, tensors);
}

}  // namespace sdspeed
