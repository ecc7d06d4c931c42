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

  // One line naming the device for a report: "NAME (selector, driver, API version)".
  virtual std::string describe() const = 0;
  // What building kernels cost so far: "programs: 3 built, 1 from disk cache, 9 reused".
  virtual std::string buildSummary() const = 0;
  // --dump-kernels: writes the source (and, where there is one, the binary) of every
  // program or pipeline made so far into dir; returns one line saying how many.
  virtual std::string dumpKernels(const std::string& dir) const = 0;
};

}  // namespace sdspeed
