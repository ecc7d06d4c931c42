// What sdspeed needs to know about a Vulkan physical device, queried once: the record
// `sdspeed devices` prints, the device key naming per-device files, and the capability
// flags that pick shader variants later (f16 arithmetic, 16-bit storage, subgroups,
// cooperative matrices), as ggml-vulkan picks its scalar or coopmat paths per device.
// Selection: "vulkan:N" (the loader's enumeration order, which `sdspeed devices` prints),
// or a substring of the device name.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device_caps.h"

namespace sdspeed::vk {

class Instance;

// One supported cooperative-matrix shape (VK_NV_cooperative_matrix or _KHR): the
// API-neutral record of runtime/device_caps.h, which the families' rules read.
using CoopMatShape = sdspeed::CoopMatShape;

struct VulkanDeviceInfo {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  int index = 0;  // position in vkEnumeratePhysicalDevices: the N of "vulkan:N"
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t apiVersion = 0;
  uint32_t vendorId = 0, deviceId = 0;
  std::string vendor;          // key word from vendorId: "nvidia", "amd", "intel", "mesa", ...
  uint32_t driverVersionRaw = 0;
  std::string driverName;      // VkPhysicalDeviceDriverProperties (Vulkan 1.2 / VK_KHR_driver_properties)
  std::string driverInfo;      // e.g. "Mesa 22.3.6 (LLVM 15.0.6)", "580.65.06"
  std::array<uint8_t, VK_UUID_SIZE> deviceUuid{};
  std::array<uint8_t, VK_UUID_SIZE> driverUuid{};
  std::array<uint8_t, VK_UUID_SIZE> pipelineCacheUuid{};
  std::vector<std::string> extensions;

  // Features (asked for in the device's creation when present: runtime/vulkan/device.cpp).
  bool shaderFloat16 = false;             // f16 arithmetic (GL_EXT_shader_explicit_arithmetic_types_float16)
  bool shaderInt8 = false;
  bool storageBuffer16BitAccess = false;  // f16 in storage buffers (GL_EXT_shader_16bit_storage)
  bool storageBuffer8BitAccess = false;
  bool cooperativeMatrixNV = false;  // VkPhysicalDeviceCooperativeMatrixFeaturesNV::cooperativeMatrix
  bool vulkanMemoryModel = false;    // which glslang's GL_NV_cooperative_matrix modules declare

  uint32_t subgroupSize = 0;
  bool subgroupArithmetic = false;  // subgroupAdd etc. in compute shaders
  uint32_t maxWorkGroupInvocations = 0;
  std::array<uint32_t, 3> maxWorkGroupSize{};
  std::array<uint32_t, 3> maxWorkGroupCount{};
  uint32_t maxSharedMemoryBytes = 0;
  uint32_t maxPushConstantsBytes = 0;
  uint32_t maxStorageBufferRange = 0;
  uint64_t minStorageBufferOffsetAlignment = 0;  // a bound range's offset is a multiple of it
  uint64_t maxAllocationBytes = 0;  // VkPhysicalDeviceMaintenance3Properties (1.1)
  uint64_t deviceLocalBytes = 0;    // the largest DEVICE_LOCAL heap

  // The queue sdspeed runs on: compute-capable, preferring one without graphics.
  uint32_t computeQueueFamily = UINT32_MAX;
  uint32_t timestampValidBits = 0;  // on that queue; 0: no timestamps
  float timestampPeriodNs = 0;      // ns per timestamp tick

  std::vector<CoopMatShape> coopMat;  // empty when neither extension is present

  bool hasExtension(const std::string& ext) const;
  bool hasComputeQueue() const { return computeQueueFamily != UINT32_MAX; }
  bool timestamps() const { return timestampValidBits > 0 && timestampPeriodNs > 0; }
  bool isGpu() const;
  std::string typeName() const;       // "discrete GPU", "integrated GPU", "CPU", ...
  std::string apiVersionText() const;  // "1.3.230"
  std::string driverText() const;      // driverInfo, or the raw version decoded
  std::string driverMajor() const;     // "580", "22": the key's last word
  std::string selector() const { return "vulkan:" + std::to_string(index); }
  // "vulkan-<vendor>-<device>-<driver major>" (runtime/device_key.h), e.g.
  // "vulkan-nvidia-h200-580". CPU devices (lavapipe, SwiftShader) drop what their names
  // say about the host ("llvmpipe (LLVM 15.0.6, 256 bits)" -> "vulkan-mesa-llvmpipe-22"),
  // as PoCL's OpenCL key does, so a database is not tied to one machine's CPU.
  std::string key() const;
  // The API-neutral record the families' rules read (runtime/device_caps.h), so a
  // variant's device rule judges a Vulkan device as it judges an OpenCL one.
  DeviceCaps caps() const;
  // What `sdspeed devices` prints about the device: (property, value) rows
  // (device_report.cpp).
  std::vector<std::pair<std::string, std::string>> report() const;
};

// Every physical device of the instance, described. Throws VkError on a driver failure.
std::vector<VulkanDeviceInfo> listVulkanDevices(const Instance& instance);

// "" -> the first GPU, else the first device; "N" or "vulkan:N" -> index N; anything
// else -> the first device whose name contains it (case-insensitive). Throws Error with
// one line naming the problem.
const VulkanDeviceInfo& selectVulkanDevice(const std::vector<VulkanDeviceInfo>& devices,
                                           const std::string& selector);

}  // namespace sdspeed::vk
