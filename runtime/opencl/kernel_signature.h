// The OpenCL lowering of named kernel arguments: a kernel's parameter list read from its
// program source, so arguments are bound by the names the kernel declares
// (kernels/kernel_args.h) and their indices are derived, never written by hand.
//
// Read by hand instead of asking the driver (clGetKernelArgInfo): argument names exist
// only for programs built from source with -cl-kernel-arg-info, and sdspeed's programs
// come from the binary cache (runtime/opencl/program_cache.h) as often as not. The parameter
// forms sdspeed's kernels use are few and fixed: a tensor `X_PARAMS` (its accessors,
// runtime/opencl/tensor_access.h), a region `SD_REGION(T, X)` (prelude.cl), a whole buffer
// `__global T* x`, and int / uint / float scalars. `#ifdef`, `#ifndef`, `#else` and
// `#if defined(A) || defined(B)` inside the list are resolved against the program's own
// #defines (conv_gemm's list depends on its variant); anything else is an error.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sdspeed {

struct ClKernelParam {
  enum class Kind { Tensor, Region, Buffer, Int, Uint, Float };
  Kind kind;
  std::string name;         // the tensor's or region's name, or the parameter's
  size_t elementBytes = 0;  // a region's element size (from its T)
  std::string declared;     // as written, for messages
};

struct ClKernelSignature {
  std::string kernel;
  std::vector<ClKernelParam> params;
};

// The parameters of `kernel` in `source` (a full program text). Throws Error naming the
// kernel when it is not declared there or a parameter has an unknown form.
ClKernelSignature parseKernelSignature(const std::string& source, const std::string& kernel);

}  // namespace sdspeed
