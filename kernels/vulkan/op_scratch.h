// An op's scratch regions on Vulkan (the Vulkan side of kernels/family.h's OpScratch): the
// regions the executor bound (PreparedOp::bindScratch: its activation arena), else the
// op's own buffers, made on first use (check, bench and tune run ops nobody binds).
// Shared by the ops of several dispatches (VkMultiDispatchOp, conv's Winograd and
// coopmat_f16), whose region lists differ (split-K partials, Winograd's planes, per-call
// derived weights) but whose binding rules are these.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/family.h"
#include "runtime/vulkan/backend.h"

namespace sdspeed {

class VkOpScratch {
 public:
  // Binds regions (one per size, in order); throws Error naming `what` on a count mismatch.
  void bind(const std::string& what, const std::vector<BufferRegion>& regions, const std::vector<uint64_t>& sizes);
  // Region i of `sizes`: the bound one, else the op's own (all made at the first call).
  vk::BufferRange at(vk::VulkanBackend& be, const std::vector<uint64_t>& sizes, size_t i);
  void clear() {
    bound_.clear();
    own_.clear();
    ownSizes_.clear();
  }

 private:
  std::vector<vk::BufferRange> bound_;              // the regions the executor bound
  std::vector<std::unique_ptr<DeviceTensor>> own_;  // else the op's own
  std::vector<uint64_t> ownSizes_;                  // the sizes own_ was made for
};

}  // namespace sdspeed
