#include "kernels/vulkan/op_scratch.h"

#include "runtime/error.h"

namespace sdspeed {

void VkOpScratch::bind(const std::string& what, const std::vector<BufferRegion>& regions,
                       const std::vector<uint64_t>& sizes) {
  if (regions.size() != sizes.size())
    throw Error(what + " on Vulkan takes " + std::to_string(sizes.size()) + " scratch regions, given " +
                std::to_string(regions.size()));
  bound_.clear();
  for (size_t i = 0; i < regions.size(); ++i)
    bound_.push_back({static_cast<const vk::Buffer*>(regions[i].mem), regions[i].offset, sizes[i]});
}

vk::BufferRange VkOpScratch::at(vk::VulkanBackend& be, const std::vector<uint64_t>& sizes, size_t i) {
  if (!bound_.empty()) return bound_.at(i);
  if (ownSizes_ != sizes) {  // first use, or the op's regions changed (e.g. per-call weights)
    own_.clear();
    for (uint64_t bytes : sizes)
      own_.push_back(be.makeTensor({Shape{1, 1, 1, static_cast<int64_t>((bytes + 3) / 4)}, StorageFormat{}}));
    ownSizes_ = sizes;
  }
  return vk::asVk(*own_.at(i)).range();
}

}  // namespace sdspeed
