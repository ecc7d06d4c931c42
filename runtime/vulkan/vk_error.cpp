#include "runtime/vulkan/vk_error.h"

namespace sdspeed::vk {

std::string resultName(VkResult r) {
  switch (r) {
#define SDSPEED_VK_RESULT(x) \
  case x:                    \
    return #x;
    SDSPEED_VK_RESULT(VK_SUCCESS)
    SDSPEED_VK_RESULT(VK_NOT_READY)
    SDSPEED_VK_RESULT(VK_TIMEOUT)
    SDSPEED_VK_RESULT(VK_INCOMPLETE)
    SDSPEED_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    SDSPEED_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    SDSPEED_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    SDSPEED_VK_RESULT(VK_ERROR_DEVICE_LOST)
    SDSPEED_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    SDSPEED_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    SDSPEED_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    SDSPEED_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    SDSPEED_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    SDSPEED_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    SDSPEED_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    SDSPEED_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    SDSPEED_VK_RESULT(VK_ERROR_UNKNOWN)
    SDSPEED_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    SDSPEED_VK_RESULT(VK_ERROR_FRAGMENTATION)
    SDSPEED_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
#undef SDSPEED_VK_RESULT
    default:
      return "VkResult " + std::to_string(static_cast<int>(r));
  }
}

VkError::VkError(const std::string& call, VkResult result, const std::string& detail)
    : RunFailure(call + " failed: " + resultName(result) + (detail.empty() ? "" : " (" + detail + ")")),
      result_(result) {}

}  // namespace sdspeed::vk
