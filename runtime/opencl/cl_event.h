// OpenCL's DeviceEvent: a profiled cl_event (the queue has CL_QUEUE_PROFILING_ENABLE).
#pragma once

#include "runtime/backend.h"
#include "runtime/opencl/cl_handle.h"

namespace sdspeed {

class ClDeviceEvent : public DeviceEvent {
 public:
  explicit ClDeviceEvent(ClEvent e) : event_(std::move(e)) {}
  cl_event handle() const { return event_.get(); }
  void wait() const override;  // throws ClError when the command failed; once
  uint64_t startNs() const override;
  uint64_t endNs() const override;

 private:
  uint64_t profile(cl_profiling_info what) const;
  ClEvent event_;
  mutable bool done_ = false;  // waited for, and completed without error
};

inline EventPtr clEvent(ClEvent e) { return std::make_shared<ClDeviceEvent>(std::move(e)); }
// The cl_event of an OpenCL op's event (an executor's wait lists); throws Error for
// another backend's event.
cl_event clEventHandle(const DeviceEvent& e);

}  // namespace sdspeed
