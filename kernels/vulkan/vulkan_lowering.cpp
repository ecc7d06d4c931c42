#include "kernels/vulkan/vulkan_lowering.h"

#include "runtime/error.h"

namespace sdspeed {

const VulkanLowering* findVulkanLowering(const std::string& family) {
  static const std::vector<VulkanLowering> table = {
      {"activation", &lowerActivationVulkan, kActivationShaders},
      {"binary", &lowerBinaryVulkan, kBinaryShaders},
  };
  for (const auto& l : table)
    if (family == l.family) return &l;
  return nullptr;
}

OpEvents VkDispatchOp::enqueue(const std::vector<DeviceTensor*>& tensors) {
  if (tensors.size() != pipeline_.storageBuffers())
    throw Error(std::string("shader ") + pipeline_.shader().name + " binds " +
                std::to_string(pipeline_.storageBuffers()) + " buffers, given " + std::to_string(tensors.size()) +
                " tensors");
  // OpRecorder binds at most 8 buffers per dispatch (VulkanBackend's recorder).
  const vk::Buffer* b[8] = {};
  for (size_t i = 0; i < tensors.size(); ++i) b[i] = &vk::asVk(*tensors[i]).buffer();
  auto& rec = backend_.recorder();
  rec.begin();
  switch (tensors.size()) {
    case 1: rec.dispatch(pipeline_, {b[0]}, push_.data(), push_.size() * 4, groups_[0], groups_[1], groups_[2]); break;
    case 2: rec.dispatch(pipeline_, {b[0], b[1]}, push_.data(), push_.size() * 4, groups_[0], groups_[1], groups_[2]); break;
    case 3:
      rec.dispatch(pipeline_, {b[0], b[1], b[2]}, push_.data(), push_.size() * 4, groups_[0], groups_[1], groups_[2]);
      break;
    case 4:
      rec.dispatch(pipeline_, {b[0], b[1], b[2], b[3]}, push_.data(), push_.size() * 4, groups_[0], groups_[1],
                   groups_[2]);
      break;
    default: throw Error("VkDispatchOp binds 1 to 4 tensors");
  }
  return vk::eventsOf(rec.submit());
}

const vk::SpirvShader& vulkanShaderFor(const StorageFormat& f, const std::vector<const vk::SpirvShader*>& shaders) {
  if (f.dtype == DType::F32) return *shaders.at(0);
  if (f.dtype == DType::F16 && shaders.size() > 1) return *shaders[1];
  throw UnsupportedError(std::string("no Vulkan shader for ") + dtypeName(f.dtype) +
                         " storage in this build (glslc without 16-bit storage)");
}

std::array<uint32_t, 3> channelGrid(const Shape& out, uint32_t layout, uint32_t wg, uint32_t items) {
  const uint32_t hw = static_cast<uint32_t>(out.hw()), C = static_cast<uint32_t>(out.c);
  const uint32_t stored = layout == 1u ? (C + 3u) / 4u * 4u : C;
  const uint32_t perItem = (hw + items - 1) / items;
  return {(perItem + wg - 1) / wg, stored, static_cast<uint32_t>(out.n)};
}

uint32_t vulkanLayoutCode(const StorageFormat& f) {
  if (f.storage != Storage::Buffer) throw UnsupportedError("Vulkan shaders read buffers, not " + f.name());
  return f.layout == Layout::NC4HW4 ? 1u : 0u;
}

}  // namespace sdspeed
