// Storage buffers with their own device memory, and host <-> device copies through a
// host-visible staging buffer.
//
// Allocation is written by hand, one VkDeviceMemory per buffer, instead of using the
// VulkanMemoryAllocator (not packaged in Debian 12, and nothing is downloaded at build
// time). That is enough here: sdspeed's buffers are few and large (an op's tensors,
// allocated once per benchmark; a model's activations are already packed into arenas by
// runtime/memory_planner.h, one buffer per arena), far below the 4096 allocations every
// driver allows (maxMemoryAllocationCount), and a sub-allocator's packing gains nothing
// on buffers of megabytes. A buffer larger than the device's maxMemoryAllocationSize is
// refused with an Error naming both sizes.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>

namespace sdspeed::vk {

class Device;

class Buffer {
 public:
  enum class Kind {
    Storage,  // device-local where the device has it: what shaders read and write
    Staging,  // host-visible and coherent, mapped for its whole life: copies to/from Storage
  };
  Buffer() = default;
  Buffer(Device& device, size_t bytes, Kind kind = Kind::Storage);
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  size_t bytes() const { return bytes_; }
  Kind kind() const { return kind_; }
  void* mapped() const { return mapped_; }  // Staging only; nullptr for Storage

 private:
  void release();
  Device* device_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  size_t bytes_ = 0;
  Kind kind_ = Kind::Storage;
  void* mapped_ = nullptr;
  uint64_t tracked_ = 0;  // storage bytes counted in the device's MemoryTracker
};

// Copies bytes host -> dst at offset (through a staging buffer and a transfer command);
// throws Error when the range does not fit in dst.
void upload(Device& device, Buffer& dst, const void* src, size_t bytes, size_t offset = 0);
// Copies bytes src at offset -> host.
void download(Device& device, const Buffer& src, void* dst, size_t bytes, size_t offset = 0);

}  // namespace sdspeed::vk
