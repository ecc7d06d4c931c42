// A logical Vulkan device: one compute queue (device_info.h picks the family), a command
// pool, and the features shaders may use enabled when the device has them (f16
// arithmetic, 16/8-bit storage). Submissions are synchronous (submit, wait on a fence):
// sdspeed times one op at a time, as its OpenCL side does with an in-order queue.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "runtime/memory_tracker.h"
#include "runtime/vulkan/device_info.h"
#include "runtime/vulkan/instance.h"

namespace sdspeed::vk {

class Buffer;

class Device {
 public:
  // Throws Error when the device cannot run sdspeed (Vulkan < 1.1, no compute queue),
  // VkError when the driver fails.
  Device(std::shared_ptr<Instance> instance, const VulkanDeviceInfo& info);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkDevice handle() const { return device_; }
  VkQueue queue() const { return queue_; }
  const VulkanDeviceInfo& info() const { return info_; }
  Instance& instance() const { return *instance_; }
  // Which optional features creation enabled (a shader using one needs it enabled).
  bool float16Enabled() const { return float16_; }
  bool storage16Enabled() const { return storage16_; }
  // VK_NV_cooperative_matrix and the Vulkan memory model were enabled (device.cpp says when).
  bool cooperativeMatrixNVEnabled() const { return coopMatNV_; }
  bool creationFeedback() const { return creationFeedback_; }
  // SDSPEED_VK_PIPELINE_STATS=1 and VK_KHR_pipeline_executable_properties: pipelines are
  // created capturing the driver's statistics (registers, spills, shared memory, as the
  // driver names them) and internal representations, which --dump-kernels writes beside
  // the GLSL (pipeline.cpp). Off by default: capturing may cost creation time.
  bool pipelineStatistics() const { return pipelineStats_; }
  // Where storage buffers count their device memory (the backend's tracker); none: not counted.
  void setMemoryTracker(std::shared_ptr<MemoryTracker> t) { tracker_ = std::move(t); }
  // Called before each host transfer (runOnce) and before a storage buffer is freed: the
  // backend flushes its deferred dispatches there (OpRecorder::setDeferred), so a copy
  // sees the commands recorded before it and no pending command reads a freed buffer.
  void setBeforeHostAccess(std::function<void()> f) { beforeHostAccess_ = std::move(f); }
  void beforeHostAccess() const {
    if (beforeHostAccess_) beforeHostAccess_();
  }
  const std::shared_ptr<MemoryTracker>& memoryTracker() const { return tracker_; }  // VK_EXT_pipeline_creation_feedback / 1.3

  // A memory type index allowed by typeBits with all `required` flags, preferring one
  // that also has `preferred`; throws Error when none has the required flags.
  uint32_t memoryType(uint32_t typeBits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred = 0) const;

  // Calls fn with the device's staging buffer of at least `bytes` (grown as needed, kept:
  // uploads reuse it instead of allocating host-visible memory for each tensor), or, while
  // another upload holds it (another thread, or an upload made inside one), with a
  // staging buffer of its own.
  void withStaging(size_t bytes, const std::function<void(Buffer&)>& fn);
  // Records with `record` into a fresh primary command buffer, submits it and waits.
  void runOnce(const std::function<void(VkCommandBuffer)>& record);
  // Submits a recorded command buffer and waits for it (thread-safe: the queue is shared).
  void submitAndWait(VkCommandBuffer cb);
  VkCommandBuffer allocateCommandBuffer();
  void freeCommandBuffer(VkCommandBuffer cb);

 private:
  std::shared_ptr<Instance> instance_;
  VulkanDeviceInfo info_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  bool float16_ = false, storage16_ = false, creationFeedback_ = false, coopMatNV_ = false, pipelineStats_ = false;
  std::shared_ptr<MemoryTracker> tracker_;
  std::function<void()> beforeHostAccess_;
  std::mutex poolMu_, queueMu_;
  std::atomic<bool> stagingBusy_{false};  // withStaging's buffer is in use (an atomic flag, not a
                                          // mutex: a nested call on the same thread must not lock)
  std::unique_ptr<Buffer> staging_;       // withStaging's; released before the device
};

}  // namespace sdspeed::vk
