// One kernel of a built OpenCL program with its arguments bound by name
// (kernels/kernel_args.h): the OpenCL lowering of a family's kernel call. It reads the
// kernel's parameter list once (kernel_signature.h), sets each argument at the index
// the list gives it, and enqueues a Launch with profiling.
#pragma once

#include <string>

#include "kernels/kernel_args.h"
#include "kernels/launch.h"
#include "runtime/opencl/cl_handle.h"
#include "runtime/opencl/cl_event.h"
#include "runtime/opencl/context.h"
#include "runtime/opencl/kernel_signature.h"

namespace sdspeed {

// A built program with the source it was built from (the parameter lists live there).
struct ClBuiltProgram {
  cl_program handle = nullptr;  // owned by the context's program cache
  std::string source;
};

class ClBoundKernel {
 public:
  ClBoundKernel() = default;
  ClBoundKernel(Context& ctx, const ClBuiltProgram& program, const std::string& name);

  // Sets every argument the kernel declares from `args`. Throws Error naming the kernel
  // and the argument for one it declares that args lacks, one args has that it does not
  // declare (unless marked may-be-unused), and a value of another kind.
  void bind(const KernelArgs& args);
  // Enqueues with profiling (the device's local-memory limit checked at the first
  // launch); see enqueueLaunch for what a refused work-group size throws.
  EventPtr launch(const Launch& l);
  EventPtr run(const KernelArgs& args, const Launch& l) {
    bind(args);
    return launch(l);
  }
  // The local-memory check launch() makes at the first launch, made now (once; nothing
  // for an empty kernel). An op of several kernels calls it for all of them before
  // enqueuing any, so an unsupported point enqueues nothing.
  void checkLimits();

  cl_kernel get() const { return kernel_.get(); }
  const std::string& name() const { return sig_.kernel; }
  const ClKernelSignature& signature() const { return sig_; }

 private:
  Context* ctx_ = nullptr;
  ClKernel kernel_;
  ClKernelSignature sig_;
  bool checkedLimits_ = false;
};

// Throws UnsupportedError if the kernel's local memory exceeds the device's.
void checkKernelLimits(const Context& ctx, cl_kernel kernel);
// Enqueues one launch with profiling; returns its event. A launch refused with
// CL_INVALID_WORK_GROUP_SIZE (register pressure can lower a kernel's limit below the
// device maximum) throws UnsupportedError; other failures throw ClError.
ClEvent enqueueLaunch(cl_command_queue q, cl_kernel kernel, const Launch& l);

}  // namespace sdspeed
