#include "runtime/vulkan/instance.h"

#include <cstdlib>
#include <cstring>
#include <iostream>

#include "runtime/vulkan/vk_error.h"

namespace sdspeed::vk {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool hasLayer(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) != VK_SUCCESS) return false;
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

bool hasInstanceExtension(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> exts(n);
  if (vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data()) != VK_SUCCESS) return false;
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

}  // namespace

bool Instance::validationRequested() {
  const char* v = std::getenv("SDSPEED_VK_VALIDATION");
  return v && std::strcmp(v, "1") == 0;
}

std::shared_ptr<Instance> Instance::create() {
  try {
    return std::make_shared<Instance>(validationRequested());
  } catch (const VkError& e) {
    if (e.result() == VK_ERROR_INCOMPATIBLE_DRIVER) return nullptr;  // no ICD installed
    throw;
  }
}

Instance::Instance(bool validation) : validation_(validation) {
  // The loader must know Vulkan 1.1 (vkEnumerateInstanceVersion exists from 1.1 on):
  // the runtime queries features through vkGetPhysicalDeviceFeatures2, core in 1.1.
  // The instance asks for the loader's version up to 1.3, the highest this code uses
  // (core pipeline creation feedback); a device's own version, capped by it, decides
  // what the device does (runtime/vulkan/device.cpp).
  uint32_t loader = VK_API_VERSION_1_0;
  auto enumerateVersion = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
      vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkEnumerateInstanceVersion"));
  if (enumerateVersion) enumerateVersion(&loader);
  if (loader < VK_API_VERSION_1_1)
    throw Error("the Vulkan loader is older than 1.1 (install a current libvulkan1)");
  apiVersion_ = loader >= VK_API_VERSION_1_3   ? VK_API_VERSION_1_3
                : loader >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2
                                               : VK_API_VERSION_1_1;

  std::vector<const char*> layers, extensions;
  if (validation_) {
    if (!hasLayer(kValidationLayer))
      throw Error("SDSPEED_VK_VALIDATION=1 but the Vulkan validation layer is not installed "
                  "(apt-get install vulkan-validationlayers)");
    if (!hasInstanceExtension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME))
      throw Error("SDSPEED_VK_VALIDATION=1 but the loader lacks " VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "sdspeed";
  app.applicationVersion = VK_MAKE_API_VERSION(0, 0, 1, 0);
  app.pEngineName = "sdspeed";
  app.apiVersion = apiVersion_;

  // The messenger is also chained into vkCreateInstance, so errors in instance
  // creation and destruction are counted too.
  VkDebugUtilsMessengerCreateInfoEXT dbg{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  dbg.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  dbg.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  dbg.pfnUserCallback = &Instance::onMessage;
  dbg.pUserData = this;

  // Synchronization validation too: a missing barrier (an upload a shader reads, one
  // dispatch's output the next reads) is a race the core checks do not see, and on
  // lavapipe it would not show in the results either.
  const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  features.pNext = &dbg;
  if (validation_) extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);

  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pNext = validation_ ? static_cast<const void*>(&features) : nullptr;
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  vkCheck(vkCreateInstance(&ci, nullptr, &instance_), "vkCreateInstance");

  if (validation_) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(proc("vkCreateDebugUtilsMessengerEXT"));
    VkResult r = create ? create(instance_, &dbg, nullptr, &messenger_) : VK_ERROR_EXTENSION_NOT_PRESENT;
    if (r != VK_SUCCESS) {
      vkDestroyInstance(instance_, nullptr);
      throw VkError("vkCreateDebugUtilsMessengerEXT", r);
    }
  }
}

Instance::~Instance() {
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(proc("vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
}

std::vector<VkPhysicalDevice> Instance::physicalDevices() const {
  uint32_t n = 0;
  vkCheck(vkEnumeratePhysicalDevices(instance_, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> out(n);
  // VK_INCOMPLETE cannot happen with the count just asked for; anything else throws.
  vkCheck(vkEnumeratePhysicalDevices(instance_, &n, out.data()), "vkEnumeratePhysicalDevices");
  out.resize(n);
  return out;
}

std::string Instance::lastValidationError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lastError_;
}

VKAPI_ATTR VkBool32 VKAPI_CALL Instance::onMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* self) {
  auto* inst = static_cast<Instance*>(self);
  const char* msg = data && data->pMessage ? data->pMessage : "(no message)";
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    ++inst->errors_;
    std::lock_guard<std::mutex> lock(inst->mu_);
    inst->lastError_ = msg;
    std::cerr << "sdspeed: vulkan validation error: " << msg << "\n";
  } else {
    ++inst->warnings_;
    std::cerr << "sdspeed: vulkan validation warning: " << msg << "\n";
  }
  return VK_FALSE;  // the spec: the application must return VK_FALSE
}

}  // namespace sdspeed::vk
