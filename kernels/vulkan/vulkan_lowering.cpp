#include "kernels/vulkan/vulkan_lowering.h"

#include <cstdlib>
#include <string>

#include "runtime/error.h"

namespace sdspeed {

const VulkanLowering* findVulkanLowering(const std::string& family) {
  static const std::vector<VulkanLowering> table = {
      {"activation", &lowerActivationVulkan, "activation"},
      {"binary", &lowerBinaryVulkan, "binary"},
      {"softmax", &lowerTokenRowVulkan, "softmax"},
      {"layernorm", &lowerTokenRowVulkan, "layernorm"},
      {"groupnorm", &lowerGroupNormVulkan, "groupnorm groupnorm_two_pass"},
      {"upsample", &lowerUpsampleVulkan, "upsample"},
      {"concat", &lowerConcatVulkan, "concat"},
      {"reshape", &lowerReshapeVulkan, "reshape"},
      {"embedding", &lowerEmbeddingVulkan, "embedding"},
      {"gemm", &lowerGemmVulkan, "gemm gemm_tiled gemm_gemv gemm_coopmat gemm_coopmat_reduce"},
      {"conv", &lowerConvVulkan, "conv conv_winograd conv_coopmat conv_coopmat_reduce conv_coopmat_weights conv_winograd_h gemm_coopmat"},
      {"timestep", &lowerTimestepVulkan, "timestep"},
      {"attention", &lowerAttentionVulkan, "attention attention_coopmat"},
  };
  for (const auto& l : table)
    if (family == l.family) return &l;
  return nullptr;
}

void vulkanCheckWordBinding(size_t binding, const DeviceTensor& t, const vk::BufferRange& r) {
  const uint64_t covered = r.bytes ? r.bytes : r.buffer->bytes() - r.offset;
  if (covered < (t.desc().bytes() + 3) / 4 * 4)
    throw UnsupportedError("binding " + std::to_string(binding) + " (" + t.desc().text() + ", " +
                           std::to_string(t.desc().bytes()) + " bytes) is read as 4-byte words on Vulkan but " +
                           "its buffer range covers " + std::to_string(covered) + " bytes");
}

OpEvents VkDispatchOp::enqueue(const std::vector<DeviceTensor*>& tensors) {
  // OpRecorder::dispatch checks the count against the pipeline's bindings.
  std::vector<vk::BufferRange> buffers;
  for (DeviceTensor* t : tensors) {
    buffers.push_back(vk::asVk(*t).range());
    const size_t i = buffers.size() - 1;
    if (i < 32 && (wordBindings_ >> i & 1u)) vulkanCheckWordBinding(i, *t, buffers.back());
  }
  auto& rec = backend_.recorder();
  rec.begin();
  rec.dispatch(pipeline_, buffers, push_.data(), push_.size() * 4, groups_[0], groups_[1], groups_[2]);
  return vk::eventsOf(rec.submit());
}

const vk::SpirvShader& vulkanModuleFor(const std::string& name, const StorageFormat& f) {
  const VulkanModules* m = findVulkanModules(name);
  if (!m) throw Error("no Vulkan modules named " + name);
  if ((f.dtype != DType::F32 && f.dtype != DType::F16) || (f.arithmetic != DType::F32 && f.arithmetic != DType::F16))
    throw UnsupportedError(std::string("no Vulkan module for ") + dtypeName(f.dtype) + " storage, " +
                           dtypeName(f.arithmetic) + " arithmetic");
  const size_t i = (f.dtype == DType::F16 ? 1 : 0) + (f.arithmetic == DType::F16 ? 2 : 0);
  if (!(*m)[i])
    throw UnsupportedError(std::string("this build's glslc made no ") + name + " module for " + dtypeName(f.dtype) +
                           " storage with " + dtypeName(f.arithmetic) + " arithmetic");
  return *(*m)[i];
}

vk::SpecConstant vulkanLocalSizeX(vk::VulkanBackend& be, uint32_t wg) {
  const uint32_t limit = be.info().maxWorkGroupSize[0];
  if (wg > limit)
    throw UnsupportedError("work-group of " + std::to_string(wg) + " exceeds the device's maxComputeWorkGroupSize[0] " +
                           std::to_string(limit));
  return vk::specU32(0, wg);
}

void vulkanCheckGroupCount(vk::VulkanBackend& be, const std::string& what, const std::array<uint32_t, 3>& groups) {
  const auto& lim = be.info().maxWorkGroupCount;
  for (int i = 0; i < 3; ++i)
    if (groups[i] > lim[i])
      throw UnsupportedError(what + " needs " + std::to_string(groups[i]) + " work-groups along dimension " +
                             std::to_string(i) + ", above the device's maxComputeWorkGroupCount " +
                             std::to_string(lim[i]));
}

VulkanCoopMatModule vulkanCoopMatModule(vk::VulkanBackend& be, const std::string& family, const VariantDef& v,
                                        const std::string& base, const std::function<std::string()>& rule) {
  const auto emu = v.defines.find("COOPMAT_EMULATE");
  if (emu != v.defines.end() && emu->second) return {base + "_emu", true};
  if (!findVulkanModules(base))
    throw UnsupportedError(family + " " + v.name + " has no vulkan kernels in this build (its glslc lacks "
                           "GL_NV_cooperative_matrix: cmake/VulkanBackend.cmake)");
  if (std::string why = rule(); !why.empty()) throw UnsupportedError(why);
  if (!be.device().cooperativeMatrixNVEnabled())
    throw UnsupportedError("device lacks the cooperativeMatrix and vulkanMemoryModel features "
                           "VK_NV_cooperative_matrix shaders need");
  return {base, false};
}

vk::SpecConstant vulkanWeightFormat(const Family& fam, const StorageFormat& f) {
  switch (fam.keyFormat(f).weights) {
    case DType::F32: return vk::specU32(20, 0);
    case DType::F16: return vk::specU32(20, 1);
    case DType::Q8_0: return vk::specU32(20, 2);
    case DType::Q4_0: return vk::specU32(20, 3);
  }
  throw Error("unknown weight format");
}



VkMultiDispatchOp::VkMultiDispatchOp(vk::VulkanBackend& be, std::string what, size_t tensors, std::vector<Pass> passes,
                                     std::vector<uint32_t> push, size_t scratchBindings,
                                     std::vector<uint64_t> scratchBytes, size_t standIn, uint32_t wordBindings)
    : be_(be), what_(std::move(what)), tensors_(tensors), passes_(std::move(passes)), push_(std::move(push)),
      scratchBindings_(scratchBindings), scratchBytes_(std::move(scratchBytes)), standIn_(standIn),
      wordBindings_(wordBindings) {
  if (!scratchBytes_.empty() && scratchBytes_.size() != scratchBindings_)
    throw Error(what_ + ": " + std::to_string(scratchBytes_.size()) + " scratch regions for " +
                std::to_string(scratchBindings_) + " scratch bindings");
  if (standIn_ >= tensors_) throw Error(what_ + ": stand-in tensor " + std::to_string(standIn_) + " out of range");
}

void VkMultiDispatchOp::bindScratch(const std::vector<BufferRegion>& regions) {
  scratch_.bind(what_, regions, scratchBytes_);
}

OpEvents VkMultiDispatchOp::enqueue(const std::vector<DeviceTensor*>& t) {
  if (t.size() != tensors_)
    throw Error(what_ + " takes " + std::to_string(tensors_) + " tensors, got " + std::to_string(t.size()));
  // Tensors as ranges of their buffers (an executor's arena holds many).
  std::vector<vk::BufferRange> buffers;
  for (DeviceTensor* x : t) buffers.push_back(vk::asVk(*x).range());
  for (size_t i = 0; i < buffers.size(); ++i)
    if (wordBindings_ & (1u << i)) vulkanCheckWordBinding(i, *t[i], buffers[i]);
  for (size_t i = 0; i < scratchBindings_; ++i)
    buffers.push_back(scratchBytes_.empty() ? buffers[standIn_] : scratch_.at(be_, scratchBytes_, i));
  auto& rec = be_.recorder();
  rec.begin();
  for (const Pass& p : passes_)
    rec.dispatch(*p.pipeline, buffers, push_.data(), push_.size() * 4, p.groups[0], p.groups[1], p.groups[2]);
  return vk::eventsOf(rec.submit());
}

std::array<uint32_t, 3> channelGrid(const Shape& out, uint32_t layout, uint32_t wg, uint32_t items) {
  const uint32_t hw = static_cast<uint32_t>(out.hw()), C = static_cast<uint32_t>(out.c);
  const uint32_t stored = layout == 1u ? (C + 3u) / 4u * 4u : C;
  const uint32_t perItem = (hw + items - 1) / items;
  return {(perItem + wg - 1) / wg, stored, static_cast<uint32_t>(out.n)};
}

bool vulkanSwitch(const char* name) {
  const char* e = std::getenv(name);
  return e && std::string(e) == "1";
}

bool vulkanVectorStaging() {
  static const bool on = !vulkanSwitch("SDSPEED_VK_SCALAR_STAGING");
  return on;
}

uint32_t vulkanWeightChunks(const Family& fam, const StorageFormat& f, int64_t K) {
  return vulkanVectorStaging() && fam.keyFormat(f).weights == DType::F16 && K % 8 == 0 ? 1u : 0u;
}

uint32_t vulkanLayoutCode(const StorageFormat& f) {
  if (f.storage != Storage::Buffer) throw UnsupportedError("Vulkan shaders read buffers, not " + f.name());
  return f.layout == Layout::NC4HW4 ? 1u : 0u;
}

}  // namespace sdspeed
