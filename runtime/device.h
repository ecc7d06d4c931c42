// OpenCL platform/device enumeration, the facts sdspeed needs about a device,
// and device selection by "P:D" index or by a substring of the device name.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sdspeed {

struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  int platformIndex = 0;
  int deviceIndex = 0;
  std::string platformName;
  std::string platformVersion;
  std::string name;
  std::string vendor;
  std::string driverVersion;
  std::string openclVersion;   // CL_DEVICE_VERSION, e.g. "OpenCL 3.0 CUDA"
  std::string openclCVersion;  // CL_DEVICE_OPENCL_C_VERSION
  std::string extensions;
  cl_device_type type = 0;
  uint32_t computeUnits = 0;
  uint64_t globalMemBytes = 0;
  uint64_t maxAllocBytes = 0;
  uint64_t localMemBytes = 0;
  uint64_t globalCacheBytes = 0;  // last-level cache, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE
  size_t maxWorkGroupSize = 0;
  std::vector<size_t> maxWorkItemSizes;
  bool imageSupport = false;
  size_t image2dMaxWidth = 0;
  size_t image2dMaxHeight = 0;
  bool fp16 = false;  // cl_khr_fp16: half arithmetic (half *storage* is core OpenCL)
  bool fp64 = false;
  bool subgroups = false;  // cl_khr_subgroups or an OpenCL 3.0 device with sub-groups
  uint32_t maxSubgroups = 0;

  bool isGpu() const { return (type & CL_DEVICE_TYPE_GPU) != 0; }
  bool isCpu() const { return (type & CL_DEVICE_TYPE_CPU) != 0; }
  bool hasExtension(const std::string& ext) const;
  std::string typeName() const;
  std::string index() const;  // "P:D"
  // Normalized key naming per-device files (tuning database, sweep cache, ceilings):
  // API, vendor, device and driver major version, lower case, [a-z0-9-] only, e.g.
  // "opencl-nvidia-h200-580" (runtime/device_key.h: the API word, and the migration of
  // keys written without it). PoCL CPU devices are "opencl-pocl-cpu-<major>": PoCL names
  // them after the host CPU model, which would tie a database to one machine.
  std::string key() const;
};

// Every device of every platform. No platform at all returns an empty list
// (the ICD loader reports CL_PLATFORM_NOT_FOUND_KHR); other failures throw.
std::vector<DeviceInfo> listDevices();

// Selection: "" -> first GPU, else first device; "P:D" -> that index;
// anything else -> the first device whose name contains it (case-insensitive).
// Throws Error with one line naming the problem (no devices, unknown name, bad index).
DeviceInfo selectDevice(const std::vector<DeviceInfo>& devices, const std::string& selector);

}  // namespace sdspeed
