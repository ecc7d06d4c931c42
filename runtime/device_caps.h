// What a device can do, as the families' rules and the harness read it, whatever the GPU
// API: the capability record issue #17 asks for in place of OpenCL's DeviceInfo.
// OpenCL's DeviceInfo (runtime/opencl/device.h) extends it with its platform and handles; a
// Vulkan device fills the same fields from its own queries. No GPU header here, so
// the declarations that read it (kernels/family.h's rules, runtime/tensor_desc.h)
// depend on no API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sdspeed {

enum class DeviceType { Gpu, Cpu, Accelerator, Other };

// One cooperative-matrix shape a device supports (Vulkan's VK_NV_cooperative_matrix or
// _KHR property list): what a coopmat variant's device rule chooses its shape from.
struct CoopMatShape {
  std::string extension;  // "NV" or "KHR"
  uint32_t m = 0, n = 0, k = 0;
  std::string a, b, c, result;  // component types: "f16", "f32", "s8", ...
  std::string scope;            // "subgroup", "workgroup", ...
  std::string text() const;     // "16x8x16 f16*f16+f32->f32 (subgroup, NV)"
};

struct DeviceCaps {
  std::string api = "opencl";  // the API the device was found through: "opencl", "vulkan"
  std::string name;
  std::string vendor;
  std::string driverVersion;
  // The API's extension names, space-separated ("cl_khr_fp16 cl_khr_subgroups ...";
  // for Vulkan its device extensions).
  std::string extensions;
  DeviceType type = DeviceType::Other;
  uint32_t computeUnits = 0;
  uint64_t globalMemBytes = 0;
  uint64_t maxAllocBytes = 0;
  uint64_t localMemBytes = 0;     // per work-group (OpenCL local, Vulkan shared memory)
  uint64_t globalCacheBytes = 0;  // last-level cache as the driver reports it
  size_t maxWorkGroupSize = 0;
  std::vector<size_t> maxWorkItemSizes;
  bool imageSupport = false;
  size_t image2dMaxWidth = 0;
  size_t image2dMaxHeight = 0;
  bool fp16 = false;  // half *arithmetic* (OpenCL cl_khr_fp16, Vulkan shaderFloat16)
  // 16-bit storage: OpenCL reads and writes half through vload_half/vstore_half in its
  // core, so every OpenCL device has it; Vulkan needs storageBuffer16BitAccess.
  bool storage16 = true;
  bool fp64 = false;
  bool subgroups = false;  // cl_khr_subgroups or an OpenCL 3.0 device with sub-groups
  uint32_t maxSubgroups = 0;
  uint32_t subgroupSize = 0;       // 0 = not reported (OpenCL reports it per kernel)
  bool cooperativeMatrix = false;  // Vulkan cooperative matrices (NV or KHR)
  std::vector<CoopMatShape> coopMat;  // their shapes, as the device lists them

  bool isGpu() const { return type == DeviceType::Gpu; }
  bool isCpu() const { return type == DeviceType::Cpu; }
  bool hasExtension(const std::string& ext) const;
  std::string typeName() const;  // "GPU", "CPU", "accelerator", "other"
};

}  // namespace sdspeed
