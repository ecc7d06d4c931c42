// A compute pipeline from embedded SPIR-V (spirv.h): its storage buffers are bindings
// 0..storageBuffers-1 of descriptor set 0, its scalars (sizes, alpha, beta) one push
// constant block, its tuning parameters specialization constants (work-group size via
// local_size_x_id, tile sizes, unroll factors: one SPIR-V module serves every value, so
// a sweep compiles nothing at build time per point). Creation goes through the on-disk
// pipeline cache (pipeline_cache.h) when one is given.
#pragma once

#include <vulkan/vulkan.h>

#include <string>
#include <vector>

#include "runtime/vulkan/pipeline_cache.h"
#include "runtime/vulkan/spirv_access.h"

namespace sdspeed::vk {

class Device;
struct SpirvShader;

class ComputePipeline {
 public:
  // Throws Error on a bad layout (push constants not a multiple of 4 or above the device's
  // limit; a shader needing f16 arithmetic or 16-bit storage the device lacks is the
  // caller's check: see Device::float16Enabled), VkError when the driver fails.
  // build false: the layout checks only, no Vulkan object made (VulkanBackend::DescribeOnly:
  // whether a point lowers, learnt without a driver compile); such a pipeline never runs.
  ComputePipeline(Device& device, const SpirvShader& shader, uint32_t storageBuffers, uint32_t pushConstantBytes,
                  std::vector<SpecConstant> spec = {}, PipelineCache* cache = nullptr, bool build = true);
  ~ComputePipeline();
  ComputePipeline(const ComputePipeline&) = delete;
  ComputePipeline& operator=(const ComputePipeline&) = delete;

  VkPipeline handle() const { return pipeline_; }
  bool built() const { return pipeline_ != VK_NULL_HANDLE; }
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout setLayout() const { return setLayout_; }
  uint32_t storageBuffers() const { return storageBuffers_; }
  // What the shader does with storage buffer i (from its SPIR-V: spirv_access.h), for
  // OpRecorder's hazard tracking.
  BindingAccess access(uint32_t i) const { return i < access_.size() ? access_[i] : BindingAccess::Write; }
  uint32_t pushConstantBytes() const { return pushBytes_; }
  const SpirvShader& shader() const { return shader_; }
  const std::vector<SpecConstant>& spec() const { return spec_; }
  const std::string& cacheKey() const { return key_; }
  // The on-disk entry was valid and given to the driver.
  bool diskCacheHit() const { return diskHit_; }
  // The driver says its pipeline cache served the pipeline (creation feedback); false
  // where the driver has no feedback or its cache stores nothing (lavapipe).
  bool driverCacheHit() const { return driverHit_; }

  // --dump-kernels: writes DIR/<shader>.<key>.comp (the preprocessed GLSL, headed by the
  // variant's defines and the specialization constants) and DIR/<shader>.<key>.spv.
  // With Device::pipelineStatistics, also DIR/<shader>.<key>.stats.txt: driverStatistics().
  void dump(const std::string& dir) const;
  // The driver's statistics and text internal representations of this pipeline, as text.
  std::string driverStatistics() const;

 private:
  Device& device_;
  const SpirvShader& shader_;
  std::vector<SpecConstant> spec_;
  uint32_t storageBuffers_ = 0, pushBytes_ = 0;
  std::vector<BindingAccess> access_;
  std::string key_;
  bool diskHit_ = false, driverHit_ = false;
  VkDescriptorSetLayout setLayout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

}  // namespace sdspeed::vk
