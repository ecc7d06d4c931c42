// The one interface through which the check harness, the tuner, bench and the CLI run
// ops on a device, whatever its GPU API (issue #17 item 1). OpenCL (runtime/opencl/) is
// its first implementation, Vulkan (runtime/vulkan/) the second. No GPU header here.
//
// What a backend provides: its device's capabilities (DeviceCaps, what the families'
// rules read), tensors in its memory (DeviceTensor), the events of the commands it ran
// (DeviceEvent: the op-time definition below), and flush/finish. How a family is
// lowered onto a backend (programs, argument binding, launch) is kernels/lowering.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device_caps.h"
#include "runtime/memory_tracker.h"
#include "runtime/device_tensor.h"
#include "runtime/tensor_desc.h"

namespace sdspeed {

// One command the device ran (an OpenCL kernel launch, a Vulkan dispatch between two
// timestamp queries). startNs/endNs wait for it and read the device clock; a command
// that failed throws Error there.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  virtual void wait() const = 0;
  virtual uint64_t startNs() const = 0;
  virtual uint64_t endNs() const = 0;
};
using EventPtr = std::shared_ptr<const DeviceEvent>;
// The events of one op's commands, in the order it enqueued them. An op's time is from
// the earliest start to the latest end (runtime/timing.h), on every backend.
using OpEvents = std::vector<EventPtr>;

// One device allocation that the graph executor places planned tensors and scratch in
// (runtime/memory_planner.h): the activation arena. Tensors made in it share its memory;
// offsets are multiples of Backend::subBufferAlignment().
class DeviceArena {
 public:
  virtual ~DeviceArena() = default;
  virtual uint64_t bytes() const = 0;
  // A tensor of desc at offset bytes into the arena (it keeps the arena's memory alive).
  virtual std::unique_ptr<DeviceTensor> tensorAt(uint64_t offset, const TensorDesc& desc) = 0;
  // The arena's opaque buffer handle, for an op's scratch region (kernels/launch.h's
  // BufferRegion::mem): valid while the arena lives.
  virtual void* handle() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const DeviceCaps& caps() const = 0;
  const std::string& api() const { return caps().api; }
  // The device's key (runtime/device_key.h), naming the API: "opencl-nvidia-h200-580",
  // "vulkan-mesa-llvmpipe-22". Per-device files (databases, ceilings) are named by it.
  virtual std::string deviceKey() const = 0;
  // A tensor in its own device memory; withCanary adds DeviceTensor::kCanaryBytes past a
  // buffer's end. Throws Error when the device cannot hold the format (image limits).
  virtual std::unique_ptr<DeviceTensor> makeTensor(const TensorDesc& desc, bool withCanary = false) = 0;
  // Submits what was enqueued without waiting for it; finish() waits for all of it.
  virtual void flush() = 0;
  virtual void finish() = 0;

  // The API and its version as the driver reports it ("OpenCL 3.0 CUDA", "Vulkan 1.3.230").
  virtual std::string apiVersion() const = 0;
  // One line naming the device for a report: "NAME (selector, driver, API version)".
  virtual std::string describe() const = 0;
  // What building kernels cost so far: "programs: 3 built, 1 from disk cache, 9 reused".
  virtual std::string buildSummary() const = 0;
  // --dump-kernels: writes the source (and, where there is one, the binary) of every
  // program or pipeline made so far into dir; returns one line saying how many.
  virtual std::string dumpKernels(const std::string& dir) const = 0;

  // What the graph executor (pipeline/exec) needs beyond single tensors.
  // The alignment of an arena offset a tensor may start at (OpenCL's
  // CL_DEVICE_MEM_BASE_ADDR_ALIGN, Vulkan's minStorageBufferOffsetAlignment), in bytes.
  virtual uint64_t subBufferAlignment() const = 0;
  // An arena of `bytes`; subBuffers asks OpenCL for a sub-buffer per tensor rather than
  // the arena with an offset (ExecOptions::arenaSubBuffers; Vulkan binds ranges anyway).
  virtual std::unique_ptr<DeviceArena> makeArena(uint64_t bytes, bool subBuffers) = 0;
  // A tensor sharing base's memory and offset, seen as desc (a reshape's output).
  virtual std::unique_ptr<DeviceTensor> makeView(const DeviceTensor& base, const TensorDesc& desc) = 0;
  // Waits for all work and for the driver to let go of what its last commands used, so
  // that freed memory has left the live count (OpenCL: a marker then finish()).
  virtual void settle() { finish(); }
  // A graph run that reads only its span (GraphExecutor::run without --profile: its first
  // command's start and its last command's end) brackets its ops with these. A backend
  // whose per-command timing costs device time records only the span's two ends meanwhile;
  // the events of the commands between them then read no start (UINT64_MAX) or no end (0),
  // which eventSpanNs's min and max pass over. Vulkan: two timestamps per dispatch cost an
  // H100 2.3 us each (`sdspeed roofline`'s dispatch line), over a millisecond per UNet call.
  // OpenCL's event profiling is always on (no-ops).
  virtual void beginSpanOnly() {}
  virtual void endSpanOnly() {}
  // Commands recorded and the barriers recorded before them, counted over the backend's
  // life (Vulkan's OpRecorder: a span-only run leaves out the barriers no hazard needs).
  // Zeros where the backend does not count them (OpenCL's in-order queue).
  struct SyncCounts {
    uint64_t dispatches = 0, barriers = 0;
  };
  virtual SyncCounts syncCounts() const { return {}; }

  // Device memory this backend allocated (runtime/memory_tracker.h).
  MemoryStats memoryStats() const { return tracker_->stats(); }
  void resetPeak() { tracker_->resetPeak(); }
  bool waitForLiveBytes(uint64_t bytes, std::chrono::milliseconds timeout) {
    return tracker_->waitForLiveBytes(bytes, timeout);
  }
  const std::shared_ptr<MemoryTracker>& memoryTracker() const { return tracker_; }

 protected:
  std::shared_ptr<MemoryTracker> tracker_ = std::make_shared<MemoryTracker>();
};

}  // namespace sdspeed
