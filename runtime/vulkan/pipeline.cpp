#include "runtime/vulkan/pipeline.h"

#include <algorithm>
#include <sstream>

#include "runtime/atomic_file.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/spirv.h"
#include "runtime/vulkan/vk_error.h"

namespace sdspeed::vk {
namespace {

// Owns the temporaries of one creation (module, cache object) however creation ends.
struct Scratch {
  VkDevice d;
  VkShaderModule module = VK_NULL_HANDLE;
  VkPipelineCache cache = VK_NULL_HANDLE;
  ~Scratch() {
    if (module) vkDestroyShaderModule(d, module, nullptr);
    if (cache) vkDestroyPipelineCache(d, cache, nullptr);
  }
};

}  // namespace

ComputePipeline::ComputePipeline(Device& device, const SpirvShader& shader, uint32_t storageBuffers,
                                 uint32_t pushConstantBytes, std::vector<SpecConstant> spec, PipelineCache* cache,
                                 bool build)
    : device_(device), shader_(shader), spec_(std::move(spec)), storageBuffers_(storageBuffers),
      pushBytes_(pushConstantBytes), access_(storageBindingAccess(shader.words, shader.wordCount, storageBuffers)) {
  const VulkanDeviceInfo& info = device.info();
  if (pushConstantBytes % 4 != 0 || pushConstantBytes > info.maxPushConstantsBytes)
    throw Error(std::string("shader ") + shader.name + ": " + std::to_string(pushConstantBytes) +
                " bytes of push constants (want a multiple of 4, at most " +
                std::to_string(info.maxPushConstantsBytes) + " on this device)");
  for (size_t i = 0; i < spec_.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (spec_[i].id == spec_[j].id)
        throw Error(std::string("shader ") + shader.name + ": specialization constant " + std::to_string(spec_[i].id) +
                    " given twice");
  if (!build) return;
  // Capturing statistics bypasses the disk cache: a binary served from it may come
  // without the internal representations asked for (its key does not say they were).
  if (device.pipelineStatistics()) cache = nullptr;
  const VkDevice d = device.handle();

  std::vector<VkDescriptorSetLayoutBinding> bindings(storageBuffers);
  for (uint32_t i = 0; i < storageBuffers; ++i)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo sli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sli.bindingCount = storageBuffers;
  sli.pBindings = bindings.data();
  vkCheck(vkCreateDescriptorSetLayout(d, &sli, nullptr, &setLayout_), "vkCreateDescriptorSetLayout");

  try {
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, pushConstantBytes};
    VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &setLayout_;
    pli.pushConstantRangeCount = pushConstantBytes ? 1 : 0;
    pli.pPushConstantRanges = &range;
    vkCheck(vkCreatePipelineLayout(d, &pli, nullptr, &layout_), "vkCreatePipelineLayout");

    Scratch s{d};
    VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mi.codeSize = shader.spirvBytes();
    mi.pCode = shader.words;
    vkCheck(vkCreateShaderModule(d, &mi, nullptr, &s.module), "vkCreateShaderModule");

    // The disk entry seeds a VkPipelineCache for this one pipeline; the driver's data
    // after creation is stored when there was no entry.
    std::string seed;
    if (cache) {
      key_ = cache->keyFor(info, shader, storageBuffers, pushConstantBytes, spec_);
      seed = cache->load(key_, info);
      diskHit_ = !seed.empty();
    }
    VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    ci.initialDataSize = seed.size();
    ci.pInitialData = seed.empty() ? nullptr : seed.data();
    VkResult r = vkCreatePipelineCache(d, &ci, nullptr, &s.cache);
    if (r != VK_SUCCESS && diskHit_) {
      cache->reject(key_, "the driver rejects its data: " + resultName(r));
      diskHit_ = false;
      ci.initialDataSize = 0;
      ci.pInitialData = nullptr;
      r = vkCreatePipelineCache(d, &ci, nullptr, &s.cache);
    }
    vkCheck(r, "vkCreatePipelineCache");

    std::vector<VkSpecializationMapEntry> entries(spec_.size());
    std::vector<uint32_t> values(spec_.size());
    for (size_t i = 0; i < spec_.size(); ++i) {
      entries[i] = {spec_[i].id, static_cast<uint32_t>(i * 4), 4};
      values[i] = spec_[i].bits;
    }
    VkSpecializationInfo si{static_cast<uint32_t>(entries.size()), entries.data(), values.size() * 4, values.data()};

    VkPipelineCreationFeedback feedback{};
    VkPipelineCreationFeedbackCreateInfo fci{VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO};
    fci.pPipelineCreationFeedback = &feedback;
    VkComputePipelineCreateInfo pci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pci.pNext = device.creationFeedback() ? &fci : nullptr;
    if (device.pipelineStatistics())
      pci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR | VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR;
    pci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pci.stage.module = s.module;
    pci.stage.pName = "main";
    pci.stage.pSpecializationInfo = spec_.empty() ? nullptr : &si;
    pci.layout = layout_;
    r = vkCreateComputePipelines(d, s.cache, 1, &pci, nullptr, &pipeline_);
    if (r != VK_SUCCESS) throw VkError("vkCreateComputePipelines", r, std::string("shader ") + shader.name);
    driverHit_ = (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) &&
                 (feedback.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT);

    if (cache && !diskHit_) {
      size_t n = 0;
      if (vkGetPipelineCacheData(d, s.cache, &n, nullptr) == VK_SUCCESS && n > 0) {
        std::string data(n, '\0');
        if (vkGetPipelineCacheData(d, s.cache, &n, data.data()) == VK_SUCCESS) {
          data.resize(n);
          cache->store(key_, data);
        }
      }
    }
  } catch (...) {
    if (layout_) vkDestroyPipelineLayout(d, layout_, nullptr);
    vkDestroyDescriptorSetLayout(d, setLayout_, nullptr);
    throw;
  }
}

ComputePipeline::~ComputePipeline() {
  const VkDevice d = device_.handle();
  vkDestroyPipeline(d, pipeline_, nullptr);
  vkDestroyPipelineLayout(d, layout_, nullptr);
  vkDestroyDescriptorSetLayout(d, setLayout_, nullptr);
}

void ComputePipeline::dump(const std::string& dir) const {
  const std::string base = dir + "/" + shader_.name + "." + (key_.empty() ? "nocache" : key_);
  std::ostringstream head;
  head << "// sdspeed --dump-kernels: " << shader_.name << "\n// glslc -D: " << shader_.defines
       << "\n// specialization constants:";
  for (const auto& s : spec_) head << " " << s.id << "=" << s.bits;
  head << "\n// push constants: " << pushBytes_ << " bytes; storage buffers: " << storageBuffers_ << "\n";
  writeFileAtomically(base + ".comp", head.str() + std::string(shader_.glsl, shader_.glslBytes));
  writeFileAtomically(base + ".spv", shader_.spirvString());
  if (device_.pipelineStatistics() && pipeline_) writeFileAtomically(base + ".stats.txt", driverStatistics());
}

std::string ComputePipeline::driverStatistics() const {
  const VkDevice d = device_.handle();
  auto props = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(d, "vkGetPipelineExecutablePropertiesKHR"));
  auto stats = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(d, "vkGetPipelineExecutableStatisticsKHR"));
  auto reprs = reinterpret_cast<PFN_vkGetPipelineExecutableInternalRepresentationsKHR>(
      vkGetDeviceProcAddr(d, "vkGetPipelineExecutableInternalRepresentationsKHR"));
  std::ostringstream o;
  o << "# driver statistics of " << shader_.name << " (VK_KHR_pipeline_executable_properties)\n";
  // Every query's result is checked: a failing one leaves a line saying so, not a list
  // read from memory the driver never filled (VK_INCOMPLETE, a shorter list, is kept).
  auto ok = [&](VkResult r, const char* what) {
    if (r == VK_SUCCESS || r == VK_INCOMPLETE) return true;
    o << "# " << what << " failed: " << resultName(r) << "\n";
    return false;
  };
  if (!props || !stats) return o.str() + "# the driver exposes no statistics functions\n";
  VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pi.pipeline = pipeline_;
  uint32_t n = 0;
  if (!ok(props(d, &pi, &n, nullptr), "vkGetPipelineExecutablePropertiesKHR")) return o.str();
  std::vector<VkPipelineExecutablePropertiesKHR> exes(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  if (!ok(props(d, &pi, &n, exes.data()), "vkGetPipelineExecutablePropertiesKHR")) return o.str();
  for (uint32_t e = 0; e < n; ++e) {
    o << "executable " << e << ": " << exes[e].name << " (" << exes[e].description << "), subgroup size "
      << exes[e].subgroupSize << "\n";
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipeline_;
    ei.executableIndex = e;
    uint32_t m = 0;
    std::vector<VkPipelineExecutableStatisticKHR> st;
    if (ok(stats(d, &ei, &m, nullptr), "vkGetPipelineExecutableStatisticsKHR")) {
      st.assign(m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
      if (!ok(stats(d, &ei, &m, st.data()), "vkGetPipelineExecutableStatisticsKHR")) st.clear();
      st.resize(std::min<size_t>(st.size(), m));
    }
    for (const auto& s : st) {
      o << "  " << s.name << " = ";
      switch (s.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: o << (s.value.b32 ? "true" : "false"); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: o << s.value.i64; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: o << s.value.u64; break;
        default: o << s.value.f64; break;
      }
      o << "  (" << s.description << ")\n";
    }
    if (!reprs) continue;
    uint32_t r = 0;
    if (!ok(reprs(d, &ei, &r, nullptr), "vkGetPipelineExecutableInternalRepresentationsKHR")) continue;
    std::vector<VkPipelineExecutableInternalRepresentationKHR> rs(
        r, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR});
    // sizes first
    if (!ok(reprs(d, &ei, &r, rs.data()), "vkGetPipelineExecutableInternalRepresentationsKHR")) continue;
    std::vector<std::string> text(r);
    for (uint32_t i = 0; i < r; ++i) {
      text[i].assign(rs[i].dataSize, '\0');
      rs[i].pData = text[i].data();
    }
    if (!ok(reprs(d, &ei, &r, rs.data()), "vkGetPipelineExecutableInternalRepresentationsKHR")) continue;
    for (uint32_t i = 0; i < r; ++i)
      o << "--- internal representation " << rs[i].name << " (" << rs[i].description << ")\n"
        << (rs[i].isText ? text[i].c_str() : "(binary, not shown)") << "\n";
  }
  return o.str();
}

}  // namespace sdspeed::vk
