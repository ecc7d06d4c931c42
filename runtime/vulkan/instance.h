// The Vulkan instance: the loader, the physical devices, and (SDSPEED_VK_VALIDATION=1)
// the Khronos validation layer with a debug messenger that counts its errors, so a test
// (tests/test_vulkan.cpp) fails on any error the layer reports, not only on a VkResult.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sdspeed::vk {

class Instance {
 public:
  // validation: enable VK_LAYER_KHRONOS_validation and the messenger; throws Error (one
  // line, naming the package) when the layer is not installed, so a test that asks for
  // validation never passes without it. Throws VkError when the loader finds no driver
  // at all (VK_ERROR_INCOMPATIBLE_DRIVER); create() turns that into "no devices".
  explicit Instance(bool validation);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  // SDSPEED_VK_VALIDATION=1 in the environment (the tests set it; ctest passes it).
  static bool validationRequested();
  // An instance with validation as requested, or nullptr when no Vulkan driver (ICD) is
  // installed: the caller lists no devices, as listDevices() does without OpenCL.
  static std::shared_ptr<Instance> create();

  VkInstance handle() const { return instance_; }
  bool validation() const { return validation_; }
  uint32_t apiVersion() const { return apiVersion_; }  // what the instance was created for
  std::vector<VkPhysicalDevice> physicalDevices() const;
  PFN_vkVoidFunction proc(const char* name) const { return vkGetInstanceProcAddr(instance_, name); }

  // What the validation layer reported since creation (0 without validation).
  int validationErrors() const { return errors_.load(); }
  int validationWarnings() const { return warnings_.load(); }
  std::string lastValidationError() const;

 private:
  static VKAPI_ATTR VkBool32 VKAPI_CALL onMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                  VkDebugUtilsMessageTypeFlagsEXT types,
                                                  const VkDebugUtilsMessengerCallbackDataEXT* data, void* self);

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  bool validation_ = false;
  uint32_t apiVersion_ = VK_API_VERSION_1_1;
  std::atomic<int> errors_{0};
  std::atomic<int> warnings_{0};
  mutable std::mutex mu_;
  std::string lastError_;
};

}  // namespace sdspeed::vk
