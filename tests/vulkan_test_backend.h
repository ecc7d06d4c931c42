// The Vulkan tests' shared backend: one VulkanBackend per test program, on the first device,
// with the validation layer on (ctest sets SDSPEED_VK_VALIDATION; a direct run validates
// too) and no disk pipeline cache (every pipeline built from its SPIR-V). Null where no
// Vulkan driver is installed: the tests skip, saying so.
#pragma once

#include <cstdlib>
#include <memory>

#include "runtime/vulkan/backend.h"
#include "runtime/vulkan/instance.h"

namespace sdspeed {

inline vk::VulkanBackend* vulkanTestBackend() {
  static std::unique_ptr<vk::VulkanBackend> be = [] {
    setenv("SDSPEED_VK_VALIDATION", "1", 0);
    if (!vk::Instance::create()) return std::unique_ptr<vk::VulkanBackend>();
    return std::make_unique<vk::VulkanBackend>("", "");
  }();
  return be.get();
}

}  // namespace sdspeed
