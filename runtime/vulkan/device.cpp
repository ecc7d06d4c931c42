#include "runtime/vulkan/device.h"

#include "runtime/vulkan/buffer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/vulkan/vk_error.h"

namespace sdspeed::vk {

Device::Device(std::shared_ptr<Instance> instance, const VulkanDeviceInfo& info)
    : instance_(std::move(instance)), info_(info) {
  if (info_.apiVersion < VK_API_VERSION_1_1)
    throw Error("Vulkan device " + info_.selector() + " (" + info_.name + ") supports Vulkan " +
                info_.apiVersionText() + "; sdspeed needs 1.1");
  if (!info_.hasComputeQueue())
    throw Error("Vulkan device " + info_.selector() + " (" + info_.name + ") has no compute queue");
  // What the device offers as core is capped by the version the instance asked for.
  const uint32_t version = std::min(info_.apiVersion, instance_->apiVersion());
  const bool v12 = version >= VK_API_VERSION_1_2;
  const bool v13 = version >= VK_API_VERSION_1_3;

  // Features: 16-bit storage is core 1.1; float16 arithmetic is 1.2 core or
  // VK_KHR_shader_float16_int8, whose extension must then be enabled too.
  std::vector<const char*> extensions;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  features.pNext = &storage16;
  void** tail = &storage16.pNext;
  storage16.storageBuffer16BitAccess = info_.storageBuffer16BitAccess;
  storage16_ = info_.storageBuffer16BitAccess;
  if (info_.storageBuffer8BitAccess) {
    storage8.storageBuffer8BitAccess = VK_TRUE;
    if (!v12) extensions.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    *tail = &storage8;
    tail = &storage8.pNext;
  }
  if (info_.shaderFloat16 || info_.shaderInt8) {
    f16.shaderFloat16 = info_.shaderFloat16;
    f16.shaderInt8 = info_.shaderInt8;
    float16_ = info_.shaderFloat16;
    if (!v12) extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    *tail = &f16;
    tail = &f16.pNext;
  }
  // Cooperative matrices (gemm coopmat_f16: kernels/gemm/gemm_coopmat.comp), only where
  // the device has the NV extension's feature and this build's glslc compiled its shader;
  // glslang's NV coopmat modules declare the Vulkan memory model, so that feature too.
  // Never on lavapipe (no such extension), so CI creates its device as before.
#if SDSPEED_GLSLC_NV_COOPERATIVE_MATRIX
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopNV{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceVulkanMemoryModelFeatures memoryModel{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  if (info_.cooperativeMatrixNV && info_.vulkanMemoryModel) {
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    coopNV.cooperativeMatrix = VK_TRUE;
    *tail = &coopNV;
    tail = &coopNV.pNext;
    if (!v12) extensions.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
    memoryModel.vulkanMemoryModel = VK_TRUE;
    *tail = &memoryModel;
    tail = &memoryModel.pNext;
    coopMatNV_ = true;
  }
#endif
  // Creation feedback tells whether the driver's pipeline cache served a pipeline
  // (reported by ComputePipeline::driverCacheHit); core in 1.3.
  if (v13) {
    creationFeedback_ = true;
  } else if (info_.hasExtension(VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME)) {
    extensions.push_back(VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
    creationFeedback_ = true;
  }

  // The driver's per-pipeline statistics (Device::pipelineStatistics), on request only.
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  const char* statsEnv = std::getenv("SDSPEED_VK_PIPELINE_STATS");
  if (statsEnv && std::strcmp(statsEnv, "0") != 0 && *statsEnv &&
      info_.hasExtension(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    executable.pipelineExecutableInfo = VK_TRUE;
    *tail = &executable;
    tail = &executable.pNext;
    pipelineStats_ = true;
  }

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  q.queueFamilyIndex = info_.computeQueueFamily;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.pNext = &features;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &q;
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  vkCheck(vkCreateDevice(info_.physical, &ci, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, info_.computeQueueFamily, 0, &queue_);
  vkGetPhysicalDeviceMemoryProperties(info_.physical, &memory_);

  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = info_.computeQueueFamily;
  VkResult r = vkCreateCommandPool(device_, &pci, nullptr, &pool_);
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (r == VK_SUCCESS) r = vkCreateFence(device_, &fci, nullptr, &fence_);
  if (r != VK_SUCCESS) {
    if (pool_) vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
    throw VkError("vkCreateCommandPool/vkCreateFence", r);
  }
}

Device::~Device() {
  if (!device_) return;
  vkDeviceWaitIdle(device_);
  staging_.reset();
  vkDestroyFence(device_, fence_, nullptr);
  vkDestroyCommandPool(device_, pool_, nullptr);
  vkDestroyDevice(device_, nullptr);
}

uint32_t Device::memoryType(uint32_t typeBits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const {
  for (int pass = 0; pass < 2; ++pass) {
    const VkMemoryPropertyFlags want = pass == 0 ? (required | preferred) : required;
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
      if ((typeBits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & want) == want) return i;
  }
  throw Error("Vulkan device " + info_.selector() + " has no memory type with the properties a buffer needs");
}

VkCommandBuffer Device::allocateCommandBuffer() {
  std::lock_guard<std::mutex> lock(poolMu_);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  vkCheck(vkAllocateCommandBuffers(device_, &ai, &cb), "vkAllocateCommandBuffers");
  return cb;
}

void Device::freeCommandBuffer(VkCommandBuffer cb) {
  std::lock_guard<std::mutex> lock(poolMu_);
  vkFreeCommandBuffers(device_, pool_, 1, &cb);
}

void Device::submitAndWait(VkCommandBuffer cb) {
  std::lock_guard<std::mutex> lock(queueMu_);
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  vkCheck(vkResetFences(device_, 1, &fence_), "vkResetFences");
  vkCheck(vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit");
  // No timeout: a kernel that runs for minutes is a slow kernel, not an error; a lost
  // device returns VK_ERROR_DEVICE_LOST here.
  vkCheck(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
}

void Device::withStaging(size_t bytes, const std::function<void(Buffer&)>& fn) {
  if (stagingBusy_.exchange(true)) {  // in use: a buffer of this call's own, as before the cache
    Buffer own(*this, bytes, Buffer::Kind::Staging);
    fn(own);
    return;
  }
  struct Release {
    std::atomic<bool>& busy;
    ~Release() { busy.store(false); }
  } release{stagingBusy_};
  if (!staging_ || staging_->bytes() < bytes) {
    staging_.reset();
    staging_ = std::make_unique<Buffer>(*this, bytes, Buffer::Kind::Staging);
  }
  fn(*staging_);
}

void Device::runOnce(const std::function<void(VkCommandBuffer)>& record) {
  beforeHostAccess();
  VkCommandBuffer cb = allocateCommandBuffer();
  struct Free {
    Device& d;
    VkCommandBuffer cb;
    ~Free() { d.freeCommandBuffer(cb); }
  } free{*this, cb};
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkCheck(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
  record(cb);
  vkCheck(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  submitAndWait(cb);
}

}  // namespace sdspeed::vk
