// Recording an op's dispatches into one command buffer with a timestamp before and after
// each, so an op's time has the definition OpenCL's event profiling gives it
// (runtime/timing.h, eventSpanNs): from the start of its first kernel to the end of its
// last. Dispatches run in recording order with a compute->compute barrier between them,
// the semantics of sdspeed's in-order OpenCL queue (each kernel sees the previous one's
// writes), so per-dispatch times do not overlap. A span-only run (DispatchSync::
// hazardsOnly, below) leaves out the barriers no hazard needs: there, dispatches that share
// no written range may overlap, and only the span's ends are stamped.
//
// Timestamps: the start one is written at the compute-shader stage, i.e. once every
// earlier command has finished its compute work (the previous dispatch's end, in this
// serialized stream); the end one at bottom-of-pipe, when the dispatch has completed.
// Ticks are masked to the queue's timestampValidBits and scaled by timestampPeriod.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace sdspeed::vk {

class Buffer;
class ComputePipeline;
class Device;

// A storage-buffer binding: bytes from offset (a multiple of the device's
// minStorageBufferOffsetAlignment); bytes 0 binds to the buffer's end. Tensors placed
// in the executor's arena are bound as ranges of it, each within maxStorageBufferRange
// even when the arena is not.
struct BufferRange {
  const Buffer* buffer = nullptr;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct DispatchTime {
  uint64_t startNs = 0, endNs = 0;  // ns after the recorder's base tick (its first op's start)
  bool started = true, ended = true;  // false: recorded without that timestamp (DispatchSync), its time 0
  // For a span's min and max: a side without its timestamp reads UINT64_MAX (start) or 0
  // (end), which they pass over.
  uint64_t spanStartNs() const { return started ? startNs : UINT64_MAX; }
  uint64_t spanEndNs() const { return ended ? endNs : 0; }
};

// How OpRecorder records the next dispatches. The default is what every op records: a
// compute->compute barrier (the dispatch sees the previous ones' writes, as on an
// in-order OpenCL queue) and a timestamp before and after it. `sdspeed roofline` turns
// them off to measure what they cost per dispatch (tuning/roofline_vulkan.cpp): the
// fixed cost each of a UNet call's ~530 dispatches paid before span-only runs left out
// the timestamps and, where no hazard needs it, the barrier (hazardsOnly).
//
// hazardsOnly (span-only runs, Backend::beginSpanOnly): the barrier is recorded only where
// the dispatch needs it: when a range it binds overlaps a range bound by a dispatch since
// the last barrier and either side may write it (read after write, write after read or
// write after write; each binding's access from the shader's SPIR-V, spirv_access.h), and
// before the first dispatch of each command buffer (ordering it after earlier
// submissions). Independent dispatches recorded back to back (an attention's Q, K and V
// projections, a ResNet block's time-embedding GEMV beside its GroupNorm) then overlap on
// the GPU; ops sharing planned scratch (split-K partials, GroupNorm statistics) keep theirs. Ranges are compared per VkBuffer: every tensor is a
// range of its own buffer or of the executor's arena, and no two buffers share memory.
struct DispatchSync {
  bool barrier = true;
  bool startStamp = true, endStamp = true;
  bool hazardsOnly = false;
};

// The dispatches of one submitted command buffer (a batch): their times, read once the
// batch has run. resolve() runs it first when it is still pending (OpRecorder::flush).
class OpRecorder;
struct DispatchBatch {
  OpRecorder* recorder = nullptr;  // null once flushed (or its recorder is gone)
  bool done = false;
  std::string error;  // set when its submission failed: reading a time throws it
  std::vector<DispatchTime> times;
  const DispatchTime& at(uint32_t i);  // flushes the recorder first when still pending
};

struct OpTiming {
  std::vector<DispatchTime> dispatches;  // in recording order (immediate submission)
  // Deferred submission: each dispatch's batch and index, resolved when first read.
  std::vector<std::pair<std::shared_ptr<DispatchBatch>, uint32_t>> pending;
  double spanNs() const;                 // latest end - earliest start; 0 without dispatches
};

class OpRecorder {
 public:
  // Room for maxDispatches dispatches of at most maxBuffers storage buffers each.
  // Throws Error when the device's compute queue has no timestamps.
  OpRecorder(Device& device, uint32_t maxDispatches = 64, uint32_t maxBuffers = 16);
  ~OpRecorder();
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;

  // Starts a new recording (the previous one's descriptor sets and queries are reused).
  void begin();
  // Binds buffers to bindings 0.. of the pipeline's set, pushes `push` (exactly the
  // pipeline's push-constant size) and dispatches groups. Throws Error (one line) on a
  // mismatch with the pipeline, a group count above the device's limit, or more
  // dispatches than the recorder has room for.
  void dispatch(const ComputePipeline& pipeline, std::initializer_list<const Buffer*> buffers, const void* push,
                size_t pushBytes, uint32_t groupsX, uint32_t groupsY = 1, uint32_t groupsZ = 1);
  void dispatch(const ComputePipeline& pipeline, const std::vector<const Buffer*>& buffers, const void* push,
                size_t pushBytes, uint32_t groupsX, uint32_t groupsY = 1, uint32_t groupsZ = 1);
  void dispatch(const ComputePipeline& pipeline, const std::vector<BufferRange>& buffers, const void* push,
                size_t pushBytes, uint32_t groupsX, uint32_t groupsY = 1, uint32_t groupsZ = 1);
  // Ends the op. Immediate (default): ends the recording, submits it, waits, and reads the
  // timestamps into OpTiming::dispatches. Deferred: keeps recording; the op's dispatches
  // are OpTiming::pending, timed when the batch is flushed.
  OpTiming submit();

  // Deferred submission (VulkanBackend turns it on): many ops' dispatches share one
  // command buffer, submitted by flush() (or when it is full), so a graph run pays one
  // queue submission and wait per ~maxDispatches dispatches instead of one per op.
  // Everything that reads or writes device memory from the host, or frees a buffer, must
  // flush first (Device's submission hook does, runtime/vulkan/device.h).
  void setDeferred(bool on);
  bool deferred() const { return deferred_; }
  // Submits the pending batch, waits, and reads its timestamps; nothing when none.
  void flush();
  // Applies to the dispatches recorded after it, until changed (DispatchSync).
  void setSync(DispatchSync sync) { sync_ = sync; }
  // Span-only recording (Backend::beginSpanOnly): the dispatches after it keep their
  // barriers (only where a hazard needs one with elideBarriers: DispatchSync::hazardsOnly)
  // but get no timestamps, except the first one's start; endSpanOnly() gives the
  // last dispatch recorded its end timestamp (bottom of pipe: after every earlier command)
  // and returns to the default sync. Meanwhile every batch run (a host transfer, a full
  // batch, --check-finite) stamps its last dispatch's end, so the span's last dispatch has
  // an end whenever its batch ran.
  void beginSpanOnly(bool elideBarriers = false);
  void endSpanOnly();
  // Counted over the recorder's life: dispatches recorded, and barriers recorded before them.
  uint64_t dispatchesRecorded() const { return dispatches_; }
  uint64_t barriersRecorded() const { return barriers_; }

 private:
  Device& device_;
  uint32_t maxDispatches_, maxBuffers_;
  uint32_t recorded_ = 0;
  bool recording_ = false;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  uint64_t base_ = 0;  // the tick every time is counted from (submit())
  bool haveBase_ = false;
  uint64_t lastRaw_ = 0, wraps_ = 0;  // the timestamp counter's wraps (timestampValidBits < 64)
  bool haveLast_ = false;
  static constexpr uint32_t kOpHeadroom = 16;  // deferred: room a batch keeps for the next op
  DispatchSync sync_;
  bool stampNextStart_ = false;  // span-only: the span's first dispatch is yet to come
  bool spanOnly_ = false;
  void stampLastEnd();           // the last recorded dispatch's end timestamp, if it has none
  std::vector<uint8_t> stamps_;  // one per recorded dispatch: bit 0 start, bit 1 end timestamp written
  struct Access {  // a bound range and whether the shader may write it
    VkBuffer buffer;
    uint64_t begin, end;
    bool write;
  };
  std::vector<Access> sinceBarrier_;  // the ranges bound since this command buffer's last barrier
  uint64_t dispatches_ = 0, barriers_ = 0;
  bool deferred_ = false;
  bool opOpen_ = false;                    // deferred: between begin() and submit()
  std::shared_ptr<DispatchBatch> batch_;   // deferred: the batch being recorded
  OpTiming op_;                            // deferred: the current op's dispatches
  void startRecording();                   // resets pools, begins the command buffer
  std::vector<DispatchTime> endAndRun();   // ends, submits, waits, reads the times
};

}  // namespace sdspeed::vk
