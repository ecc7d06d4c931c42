#include "runtime/vulkan/buffer.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "runtime/vulkan/device.h"
#include "runtime/vulkan/vk_error.h"

namespace sdspeed::vk {

Buffer::Buffer(Device& device, size_t bytes, Kind kind) : device_(&device), bytes_(bytes), kind_(kind) {
  const VulkanDeviceInfo& info = device.info();
  if (bytes == 0) throw Error("a Vulkan buffer of 0 bytes was asked for");
  if (info.maxAllocationBytes && bytes > info.maxAllocationBytes)
    throw Error("a Vulkan buffer of " + std::to_string(bytes) + " bytes exceeds the device's largest allocation (" +
                std::to_string(info.maxAllocationBytes) + " bytes)");
  VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  ci.size = bytes;
  ci.usage = kind == Kind::Storage ? VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                         VK_BUFFER_USAGE_TRANSFER_DST_BIT
                                   : VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkDevice d = device.handle();
  vkCheck(vkCreateBuffer(d, &ci, nullptr, &buffer_), "vkCreateBuffer");
  try {
    VkMemoryRequirements req{};
    vkGetBufferMemoryRequirements(d, buffer_, &req);
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    // Staging memory must be coherent: no flush/invalidate calls to forget; every
    // desktop driver and lavapipe offer HOST_VISIBLE|HOST_COHERENT. Cached is preferred
    // for downloads (reads from uncached memory are slow on discrete GPUs).
    ai.memoryTypeIndex =
        kind == Kind::Storage
            ? device.memoryType(req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
            : device.memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    VkResult r = vkAllocateMemory(d, &ai, nullptr, &memory_);
    if (r != VK_SUCCESS)
      throw VkError("vkAllocateMemory", r, std::to_string(req.size) + " bytes");
    vkCheck(vkBindBufferMemory(d, buffer_, memory_, 0), "vkBindBufferMemory");
    if (kind == Kind::Staging) vkCheck(vkMapMemory(d, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
    // Storage counts as the run's device memory (staging is host memory: one copy's, or
    // the device's upload buffer, up to 32 MiB, not counted).
    if (kind == Kind::Storage && device.memoryTracker()) {
      tracked_ = req.size;
      device.memoryTracker()->allocated(tracked_);
    }
  } catch (...) {
    release();
    throw;
  }
}

void Buffer::release() {
  if (!device_) return;
  if (kind_ == Kind::Storage && buffer_) {
    try {
      device_->beforeHostAccess();  // no deferred dispatch may still read this buffer
    } catch (const std::exception&) {
      // A lost device: the commands will never run; freeing is all that is left.
    }
  }
  VkDevice d = device_->handle();
  if (mapped_) vkUnmapMemory(d, memory_);
  if (buffer_) vkDestroyBuffer(d, buffer_, nullptr);
  if (memory_) vkFreeMemory(d, memory_, nullptr);
  if (tracked_ && device_->memoryTracker()) device_->memoryTracker()->released(tracked_);
  tracked_ = 0;
  mapped_ = nullptr;
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  device_ = nullptr;
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& o) noexcept { *this = std::move(o); }

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    device_ = std::exchange(o.device_, nullptr);
    buffer_ = std::exchange(o.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(o.memory_, VK_NULL_HANDLE);
    mapped_ = std::exchange(o.mapped_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    tracked_ = std::exchange(o.tracked_, 0);
    kind_ = o.kind_;
  }
  return *this;
}

namespace {

// The largest staging chunk of an upload (host-visible memory the device keeps): SD
// 1.5's largest f16 weight (a 1280x1280 3x3 conv, 28 MiB) in one copy, f32 ones in two.
constexpr size_t kUploadChunk = size_t{32} << 20;

void checkRange(const Buffer& b, size_t bytes, size_t offset, const char* what) {
  if (bytes == 0 || offset > b.bytes() || bytes > b.bytes() - offset)
    throw Error(std::string(what) + " of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                " does not fit a Vulkan buffer of " + std::to_string(b.bytes()) + " bytes");
}

}  // namespace

void upload(Device& device, Buffer& dst, const void* src, size_t bytes, size_t offset) {
  checkRange(dst, bytes, offset, "an upload");
  // Through the device's staging buffer, in chunks of at most kUploadChunk: a model's
  // weights (hundreds of tensors) no longer allocate and map host-visible memory each.
  device.withStaging(std::min(bytes, kUploadChunk), [&](Buffer& staging) {
    for (size_t done = 0; done < bytes;) {
      const size_t n = std::min(staging.bytes(), bytes - done);
      std::memcpy(staging.mapped(), static_cast<const std::byte*>(src) + done, n);
      device.runOnce([&](VkCommandBuffer cb) {
        VkBufferCopy region{0, offset + done, n};
        vkCmdCopyBuffer(cb, staging.handle(), dst.handle(), 1, &region);
        // Later submissions' shaders see the copy (the fence wait orders the host side only).
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                             nullptr, 0, nullptr);
      });
      done += n;
    }
  });
}

void download(Device& device, const Buffer& src, void* dst, size_t bytes, size_t offset) {
  checkRange(src, bytes, offset, "a download");
  Buffer staging(device, bytes, Buffer::Kind::Staging);
  device.runOnce([&](VkCommandBuffer cb) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                         nullptr, 0, nullptr);
    VkBufferCopy region{offset, 0, bytes};
    vkCmdCopyBuffer(cb, src.handle(), staging.handle(), 1, &region);
    // The copy's writes made visible to the host's read of the mapped memory.
    VkMemoryBarrier hb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    hb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    hb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &hb, 0, nullptr, 0,
                         nullptr);
  });
  std::memcpy(dst, staging.mapped(), bytes);
}

}  // namespace sdspeed::vk
