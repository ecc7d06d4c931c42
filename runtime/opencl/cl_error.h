// OpenCL error handling: every failing OpenCL call becomes a ClError that names
// the call and the error code by name, e.g. "clBuildProgram: CL_BUILD_PROGRAM_FAILURE (-11)".
#pragma once

#include <CL/cl.h>

#include <string>

#include "runtime/error.h"

namespace sdspeed {

// "CL_OUT_OF_RESOURCES" for -5; "CL_UNKNOWN_ERROR(-1234)" for codes no spec names.
std::string clErrorName(cl_int code);

// A failed OpenCL call: a run failure (exit 1), whatever the input.
class ClError : public RunFailure {
 public:
  ClError(std::string call, cl_int code, const std::string& detail = {});
  const std::string& call() const { return call_; }
  cl_int code() const { return code_; }

 private:
  std::string call_;
  cl_int code_;
};

// Throws ClError(call, code) unless code == CL_SUCCESS.
inline void clCheck(cl_int code, const char* call) {
  if (code != CL_SUCCESS) throw ClError(call, code);
}

}  // namespace sdspeed
