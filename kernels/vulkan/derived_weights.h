// Resident derived weights on Vulkan: a weight tensor's other layout that an op makes
// once on the device and keeps (conv's Winograd transforms U, conv coopmat_f16's tap-major
// f16 rows), one buffer per weight tensor the op has been called with. Entries are keyed
// by the source buffer, its offset and its version (DeviceTensor::version counts host
// writes), and hold the source buffer so its address is never reused while the entry
// lives. Up to kEntries (runtime/timing.h rotates up to 64 weight sets); the oldest goes
// first, and a tensor with new contents replaces its own entry.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/vulkan/backend.h"

namespace sdspeed {

class VkDerivedWeights {
 public:
  static constexpr size_t kEntries = 64;
  VkDerivedWeights(vk::VulkanBackend& be, uint64_t bytes) : be_(be), bytes_(bytes) {}
  // The derived buffer of weight tensor w: the cached one (fresh = false), or a new
  // entry's (fresh = true), which the caller fills in the recording that first reads it.
  // Call before recording: dropping an entry frees a buffer, which runs the batch.
  vk::BufferRange get(const DeviceTensor& w, bool& fresh);
  void clear() { entries_.clear(); }
  uint64_t bytes() const { return bytes_; }

 private:
  struct Entry {
    std::shared_ptr<vk::Buffer> source;  // held: its address identifies the tensor
    uint64_t offset = 0, version = 0;
    std::unique_ptr<DeviceTensor> prepared;
  };
  vk::VulkanBackend& be_;
  uint64_t bytes_;
  std::vector<Entry> entries_;
};

}  // namespace sdspeed
