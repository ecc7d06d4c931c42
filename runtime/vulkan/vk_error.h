// Vulkan failures as sdspeed errors: a VkResult other than VK_SUCCESS from a call that
// must succeed is a RunFailure (runtime/error.h: a device or driver error, exit 1) naming
// the call and the result, as ClError does for OpenCL (runtime/opencl/cl_error.h).
#pragma once

#include <vulkan/vulkan.h>

#include <string>

#include "runtime/error.h"

namespace sdspeed::vk {

// "VK_ERROR_OUT_OF_DEVICE_MEMORY", or the number for a result this build does not name.
std::string resultName(VkResult r);

class VkError : public RunFailure {
 public:
  VkError(const std::string& call, VkResult result, const std::string& detail = "");
  VkResult result() const { return result_; }

 private:
  VkResult result_;
};

inline void vkCheck(VkResult r, const char* call) {
  if (r != VK_SUCCESS) throw VkError(call, r);
}

}  // namespace sdspeed::vk
