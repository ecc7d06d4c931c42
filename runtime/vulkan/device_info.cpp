#include "runtime/vulkan/device_info.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include "runtime/device_key.h"
#include "runtime/vulkan/instance.h"
#include "runtime/vulkan/vk_error.h"

// VK_KHR_cooperative_matrix came with Vulkan headers 1.3.255; Debian 12 ships 1.3.239.
// Its query is mirrored here from the registry (vk.xml) so a newer driver's shapes are
// reported by a build against the older headers; the newer headers' own definitions are
// used when present.
#ifndef VK_KHR_cooperative_matrix
namespace {
constexpr VkStructureType kSTypeCoopMatPropertiesKHR = static_cast<VkStructureType>(1000506001);
struct CoopMatPropertiesKHR {
  VkStructureType sType;
  void* pNext;
  uint32_t MSize, NSize, KSize;
  int32_t AType, BType, CType, ResultType;  // VkComponentTypeKHR: the values of VkComponentTypeNV
  VkBool32 saturatingAccumulation;
  int32_t scope;  // VkScopeKHR: the values of VkScopeNV
};
using PfnCoopMatPropertiesKHR = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, CoopMatPropertiesKHR*);
}  // namespace
#else
namespace {
constexpr VkStructureType kSTypeCoopMatPropertiesKHR = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
using CoopMatPropertiesKHR = VkCooperativeMatrixPropertiesKHR;
using PfnCoopMatPropertiesKHR = PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR;
}  // namespace
#endif

namespace sdspeed::vk {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// PCI vendor IDs, and Khronos-assigned ones (VkVendorId) for vendors without one.
std::string vendorWord(uint32_t id) {
  switch (id) {
    case 0x10DE: return "nvidia";
    case 0x1002: return "amd";
    case 0x1022: return "amd";
    case 0x8086: return "intel";
    case 0x13B5: return "arm";
    case 0x5143: return "qualcomm";
    case 0x1010: return "imgtec";
    case 0x144D: return "samsung";
    case 0x106B: return "apple";
    case 0x1AE0: return "google";  // SwiftShader
    case 0x14E4: return "broadcom";
    case 0x10005: return "mesa";   // VK_VENDOR_ID_MESA: lavapipe, venus
    default: {
      char buf[16];
      std::snprintf(buf, sizeof buf, "vendor%04x", id);
      return buf;
    }
  }
}

std::string componentName(int32_t t) {
  static const char* names[] = {"f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"};
  return t >= 0 && t < 11 ? names[t] : "type" + std::to_string(t);
}

std::string scopeName(int32_t s) {
  switch (s) {
    case 1: return "device";
    case 2: return "workgroup";
    case 3: return "subgroup";
    case 5: return "queue family";
    default: return "scope" + std::to_string(s);
  }
}

std::string uuidless(const char* s, size_t max) { return std::string(s, strnlen(s, max)); }

void queryCoopMat(const Instance& inst, VulkanDeviceInfo& info) {
  if (info.hasExtension("VK_NV_cooperative_matrix")) {
    auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        inst.proc("vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    uint32_t n = 0;
    if (get && get(info.physical, &n, nullptr) == VK_SUCCESS) {
      std::vector<VkCooperativeMatrixPropertiesNV> props(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
      if (get(info.physical, &n, props.data()) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; ++i) {
          const auto& p = props[i];
          info.coopMat.push_back({"NV", p.MSize, p.NSize, p.KSize, componentName(p.AType), componentName(p.BType),
                                  componentName(p.CType), componentName(p.DType), scopeName(p.scope)});
        }
    }
  }
  if (info.hasExtension("VK_KHR_cooperative_matrix")) {
    auto get = reinterpret_cast<PfnCoopMatPropertiesKHR>(inst.proc("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    uint32_t n = 0;
    if (get && get(info.physical, &n, nullptr) == VK_SUCCESS) {
      CoopMatPropertiesKHR blank{};
      blank.sType = kSTypeCoopMatPropertiesKHR;
      std::vector<CoopMatPropertiesKHR> props(n, blank);
      if (get(info.physical, &n, props.data()) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; ++i) {
          const auto& p = props[i];
          info.coopMat.push_back({"KHR", p.MSize, p.NSize, p.KSize, componentName(p.AType), componentName(p.BType),
                                  componentName(p.CType), componentName(p.ResultType), scopeName(p.scope)});
        }
    }
  }
}

VulkanDeviceInfo describe(const Instance& inst, VkPhysicalDevice pd, int index) {
  VulkanDeviceInfo info;
  info.physical = pd;
  info.index = index;

  uint32_t n = 0;
  vkCheck(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr), "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> exts(n);
  vkCheck(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data()), "vkEnumerateDeviceExtensionProperties");
  for (uint32_t i = 0; i < n; ++i) info.extensions.push_back(exts[i].extensionName);

  VkPhysicalDeviceProperties base{};
  vkGetPhysicalDeviceProperties(pd, &base);
  info.apiVersion = base.apiVersion;
  const bool v11 = base.apiVersion >= VK_API_VERSION_1_1 && inst.apiVersion() >= VK_API_VERSION_1_1;
  const bool v12 = base.apiVersion >= VK_API_VERSION_1_2 && inst.apiVersion() >= VK_API_VERSION_1_2;

  // The *2 queries only chain structures the device supports (its version or an
  // extension): the validation layer rejects the others.
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceIDProperties ids{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopNV{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceVulkanMemoryModelFeatures memoryModel{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  if (v11) {
    props.pNext = &subgroup;
    subgroup.pNext = &ids;
    ids.pNext = &m3;
    if (v12 || info.hasExtension(VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME)) m3.pNext = &driver;
    vkGetPhysicalDeviceProperties2(pd, &props);

    features.pNext = &storage16;
    void** tail = &storage16.pNext;
    if (v12 || info.hasExtension(VK_KHR_8BIT_STORAGE_EXTENSION_NAME)) {
      *tail = &storage8;
      tail = &storage8.pNext;
    }
    if (v12 || info.hasExtension(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) {
      *tail = &f16;
      tail = &f16.pNext;
    }
    // glslang's GL_NV_cooperative_matrix modules declare the Vulkan memory model, so the
    // coopmat shaders need both features (runtime/vulkan/device.cpp enables them).
    if (info.hasExtension(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
      *tail = &coopNV;
      tail = &coopNV.pNext;
    }
    if (v12 || info.hasExtension(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME)) *tail = &memoryModel;
    vkGetPhysicalDeviceFeatures2(pd, &features);
  }

  info.name = uuidless(base.deviceName, VK_MAX_PHYSICAL_DEVICE_NAME_SIZE);
  info.type = base.deviceType;
  info.vendorId = base.vendorID;
  info.deviceId = base.deviceID;
  info.vendor = vendorWord(base.vendorID);
  info.driverVersionRaw = base.driverVersion;
  info.driverName = uuidless(driver.driverName, VK_MAX_DRIVER_NAME_SIZE);
  info.driverInfo = uuidless(driver.driverInfo, VK_MAX_DRIVER_INFO_SIZE);
  std::memcpy(info.deviceUuid.data(), ids.deviceUUID, VK_UUID_SIZE);
  std::memcpy(info.driverUuid.data(), ids.driverUUID, VK_UUID_SIZE);
  std::memcpy(info.pipelineCacheUuid.data(), base.pipelineCacheUUID, VK_UUID_SIZE);

  info.shaderFloat16 = f16.shaderFloat16;
  info.shaderInt8 = f16.shaderInt8;
  info.storageBuffer16BitAccess = storage16.storageBuffer16BitAccess;
  info.storageBuffer8BitAccess = storage8.storageBuffer8BitAccess;
  info.cooperativeMatrixNV = coopNV.cooperativeMatrix;
  info.vulkanMemoryModel = memoryModel.vulkanMemoryModel;
  info.subgroupSize = subgroup.subgroupSize;
  info.subgroupArithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                            (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);

  const VkPhysicalDeviceLimits& lim = base.limits;
  info.maxWorkGroupInvocations = lim.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    info.maxWorkGroupSize[i] = lim.maxComputeWorkGroupSize[i];
    info.maxWorkGroupCount[i] = lim.maxComputeWorkGroupCount[i];
  }
  info.maxSharedMemoryBytes = lim.maxComputeSharedMemorySize;
  info.maxPushConstantsBytes = lim.maxPushConstantsSize;
  info.maxStorageBufferRange = lim.maxStorageBufferRange;
  info.minStorageBufferOffsetAlignment = lim.minStorageBufferOffsetAlignment;
  info.maxAllocationBytes = m3.maxMemoryAllocationSize;
  info.timestampPeriodNs = lim.timestampPeriod;

  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.deviceLocalBytes = std::max<uint64_t>(info.deviceLocalBytes, mem.memoryHeaps[i].size);

  // A compute queue; one without graphics first (a dedicated compute family, as ggml-vulkan
  // prefers), and among equals one with timestamps.
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> families(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, families.data());
  int best = -1;
  auto rank = [&](uint32_t i) {
    return (families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT ? 0 : 2) + (families[i].timestampValidBits ? 1 : 0);
  };
  for (uint32_t i = 0; i < nq; ++i)
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && families[i].queueCount > 0 && (best < 0 || rank(i) > rank(best)))
      best = static_cast<int>(i);
  if (best >= 0) {
    info.computeQueueFamily = static_cast<uint32_t>(best);
    info.timestampValidBits = families[best].timestampValidBits;
  }
  queryCoopMat(inst, info);
  return info;
}

}  // namespace

bool VulkanDeviceInfo::hasExtension(const std::string& ext) const {
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

DeviceCaps VulkanDeviceInfo::caps() const {
  DeviceCaps c;
  c.api = "vulkan";
  c.name = name;
  c.vendor = vendor;
  c.driverVersion = driverText();
  for (const auto& e : extensions) c.extensions += (c.extensions.empty() ? "" : " ") + e;
  c.type = isGpu() ? DeviceType::Gpu : type == VK_PHYSICAL_DEVICE_TYPE_CPU ? DeviceType::Cpu : DeviceType::Other;
  c.globalMemBytes = deviceLocalBytes;
  // A storage buffer binding is also bounded by maxStorageBufferRange: the smaller wins.
  c.maxAllocBytes = maxAllocationBytes;
  if (maxStorageBufferRange) c.maxAllocBytes = std::min<uint64_t>(c.maxAllocBytes, maxStorageBufferRange);
  c.localMemBytes = maxSharedMemoryBytes;
  c.maxWorkGroupSize = maxWorkGroupInvocations;
  c.maxWorkItemSizes.assign(maxWorkGroupSize.begin(), maxWorkGroupSize.end());
  c.imageSupport = false;  // no family lowers image2d storage to Vulkan storage images yet
  c.fp16 = shaderFloat16;
  c.storage16 = storageBuffer16BitAccess;
  c.subgroups = subgroupArithmetic;
  c.subgroupSize = subgroupSize;
  c.cooperativeMatrix = !coopMat.empty();
  c.coopMat = coopMat;
  return c;
}

bool VulkanDeviceInfo::isGpu() const {
  return type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU || type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
         type == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
}

std::string VulkanDeviceInfo::typeName() const {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

std::string VulkanDeviceInfo::apiVersionText() const {
  return std::to_string(VK_API_VERSION_MAJOR(apiVersion)) + "." + std::to_string(VK_API_VERSION_MINOR(apiVersion)) +
         "." + std::to_string(VK_API_VERSION_PATCH(apiVersion));
}

std::string VulkanDeviceInfo::driverText() const {
  if (!driverInfo.empty()) return driverName.empty() ? driverInfo : driverName + " " + driverInfo;
  const uint32_t v = driverVersionRaw;
  if (vendorId == 0x10DE)  // NVIDIA packs 10.8.8.6 bits
    return std::to_string(v >> 22) + "." + std::to_string((v >> 14) & 0xff) + "." + std::to_string((v >> 6) & 0xff);
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

std::string VulkanDeviceInfo::driverMajor() const {
  // The first number of driverInfo ("Mesa 22.3.6" -> 22, "580.65.06" -> 580), as the
  // OpenCL key takes CL_DRIVER_VERSION's; without driver properties, the packed version
  // (NVIDIA and Mesa both keep the major in the top 10 bits).
  const std::string& s = driverInfo;
  auto digit = std::find_if(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
  if (digit != s.end()) {
    auto end = std::find_if(digit, s.end(), [](unsigned char c) { return !std::isdigit(c); });
    return std::string(digit, end);
  }
  return std::to_string(driverVersionRaw >> 22);
}

std::string VulkanDeviceInfo::key() const {
  std::string device = name;
  if (type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    // "llvmpipe (LLVM 15.0.6, 256 bits)": the first word names the driver; the rest, the host.
    const std::string slug = deviceKeySlug(name);
    device = slug.substr(0, slug.find('-'));
  }
  return makeDeviceKey("vulkan", vendor, device, driverMajor());
}

std::vector<VulkanDeviceInfo> listVulkanDevices(const Instance& instance) {
  std::vector<VulkanDeviceInfo> out;
  const auto devices = instance.physicalDevices();
  for (size_t i = 0; i < devices.size(); ++i) out.push_back(describe(instance, devices[i], static_cast<int>(i)));
  return out;
}

const VulkanDeviceInfo& selectVulkanDevice(const std::vector<VulkanDeviceInfo>& devices, const std::string& selector) {
  if (devices.empty())
    throw Error("no Vulkan device found (is a driver such as mesa-vulkan-drivers installed?)");
  if (selector.empty()) {
    for (const auto& d : devices)
      if (d.isGpu()) return d;
    return devices.front();
  }
  std::string s = selector;
  if (s.rfind("vulkan:", 0) == 0) s = s.substr(7);
  int index = -1;
  auto r = std::from_chars(s.data(), s.data() + s.size(), index);
  if (!s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size()) {
    if (index >= 0 && index < static_cast<int>(devices.size())) return devices[index];
    throw Error("no Vulkan device at index " + selector + " (see `sdspeed devices`)");
  }
  if (s.empty() || (selector.rfind("vulkan:", 0) == 0 && s.find_first_not_of("0123456789") == std::string::npos))
    throw Error("bad Vulkan device selector '" + selector + "' (want vulkan:N or a name)");
  const std::string want = lower(s);
  for (const auto& d : devices)
    if (lower(d.name).find(want) != std::string::npos) return d;
  throw Error("no Vulkan device matches '" + selector + "' (see `sdspeed devices`)");
}

}  // namespace sdspeed::vk
