#include "runtime/opencl/cl_event.h"

#include "runtime/opencl/cl_error.h"

namespace sdspeed {

void ClDeviceEvent::wait() const {
  if (done_) return;  // eventSpanNs reads start and end: one wait serves both
  cl_event ev = event_.get();
  clCheck(clWaitForEvents(1, &ev), "clWaitForEvents");
  cl_int status = CL_COMPLETE;
  clCheck(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr),
          "clGetEventInfo");
  if (status < 0) throw ClError("kernel execution", status);
  done_ = true;
}

uint64_t ClDeviceEvent::profile(cl_profiling_info what) const {
  wait();
  cl_ulong t = 0;
  clCheck(clGetEventProfilingInfo(event_.get(), what, sizeof(t), &t, nullptr), "clGetEventProfilingInfo");
  return t;
}

uint64_t ClDeviceEvent::startNs() const { return profile(CL_PROFILING_COMMAND_START); }
uint64_t ClDeviceEvent::endNs() const { return profile(CL_PROFILING_COMMAND_END); }

cl_event clEventHandle(const DeviceEvent& e) {
  auto* cl = dynamic_cast<const ClDeviceEvent*>(&e);
  if (!cl) throw Error("an event of another GPU API given to OpenCL");
  return cl->handle();
}

}  // namespace sdspeed
