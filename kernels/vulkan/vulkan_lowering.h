// The Vulkan lowering of the families (issue #21): which families have GLSL compute
// shaders, and the op they run as. A family's Vulkan lowering lives beside its other
// sources (kernels/<family>/<family>_vulkan.cpp and *.comp) and is listed in the table of
// vulkan_lowering.cpp; a family not listed is an UnsupportedError ("family X has no
// vulkan kernels"), which `sdspeed check --backend vulkan` reports as skipped.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/family.h"
#include "runtime/vulkan/backend.h"
#include "runtime/vulkan/spirv.h"

namespace sdspeed {

using VulkanLowerFn = std::unique_ptr<PreparedOp> (*)(vk::VulkanBackend&, const Family&, const VariantDef&,
                                                      const ParamPoint&, const Problem&, const StorageFormat&);

struct VulkanLowering {
  const char* family;
  VulkanLowerFn prepare;
  std::vector<const vk::SpirvShader*> shaders;  // every module it may use (source hash, dumps)
};

// The family's Vulkan lowering, or null when it has none.
const VulkanLowering* findVulkanLowering(const std::string& family);

// An op of one dispatch: binds the slots' tensors to bindings 0.. in slot order, pushes
// `push`, dispatches `groups`, and returns the dispatch's timestamps as its event.
class VkDispatchOp : public PreparedOp {
 public:
  VkDispatchOp(vk::VulkanBackend& backend, const vk::ComputePipeline& pipeline, std::vector<uint32_t> push,
               std::array<uint32_t, 3> groups)
      : backend_(backend), pipeline_(pipeline), push_(std::move(push)), groups_(groups) {}
  OpEvents enqueue(const std::vector<DeviceTensor*>& tensors) override;

 private:
  vk::VulkanBackend& backend_;
  const vk::ComputePipeline& pipeline_;
  std::vector<uint32_t> push_;
  std::array<uint32_t, 3> groups_;
};

// The storage-layout code the shaders take as a push constant (prelude.glsl).
uint32_t vulkanLayoutCode(const StorageFormat& f);
// The module of `shaders` (in the order f32 storage, f16 storage) for f's storage dtype;
// UnsupportedError when this build's glslc made no 16-bit-storage module.
const vk::SpirvShader& vulkanShaderFor(const StorageFormat& f, const std::vector<const vk::SpirvShader*>& shaders);
// The dispatch of the elementwise shaders: an invocation per (ITEMS positions, stored
// output channel, sample), work-groups of wg along the positions.
std::array<uint32_t, 3> channelGrid(const Shape& out, uint32_t layout, uint32_t wg, uint32_t items);

// The family lowerings (one per family that has GLSL).
std::unique_ptr<PreparedOp> lowerActivationVulkan(vk::VulkanBackend&, const Family&, const VariantDef&,
                                                  const ParamPoint&, const Problem&, const StorageFormat&);
extern const std::vector<const vk::SpirvShader*> kActivationShaders;
std::unique_ptr<PreparedOp> lowerBinaryVulkan(vk::VulkanBackend&, const Family&, const VariantDef&, const ParamPoint&,
                                              const Problem&, const StorageFormat&);
extern const std::vector<const vk::SpirvShader*> kBinaryShaders;

}  // namespace sdspeed
