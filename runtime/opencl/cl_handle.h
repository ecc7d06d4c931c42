// Move-only owners of OpenCL objects; each releases its object exactly once.
#pragma once

#include <CL/cl.h>

#include <utility>

namespace sdspeed {

template <typename T, cl_int (*Retain)(T), cl_int (*Release)(T)>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(T h) : h_(h) {}  // takes ownership of one reference
  ClHandle(const ClHandle& o) : h_(o.h_) {
    if (h_) Retain(h_);
  }
  ClHandle(ClHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  ClHandle& operator=(ClHandle o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~ClHandle() {
    if (h_) Release(h_);
  }
  T get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  T h_ = nullptr;
};

using ClContext = ClHandle<cl_context, clRetainContext, clReleaseContext>;
using ClQueue = ClHandle<cl_command_queue, clRetainCommandQueue, clReleaseCommandQueue>;
using ClProgram = ClHandle<cl_program, clRetainProgram, clReleaseProgram>;
using ClKernel = ClHandle<cl_kernel, clRetainKernel, clReleaseKernel>;
using ClMem = ClHandle<cl_mem, clRetainMemObject, clReleaseMemObject>;
using ClEvent = ClHandle<cl_event, clRetainEvent, clReleaseEvent>;

}  // namespace sdspeed
