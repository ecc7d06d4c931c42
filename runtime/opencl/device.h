// OpenCL platform/device enumeration, the facts sdspeed needs about a device,
// and device selection by "P:D" index or by a substring of the device name.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device_caps.h"

namespace sdspeed {

// An OpenCL device: the neutral capabilities (runtime/device_caps.h) and what only
// OpenCL has (platform, handles, versions).
struct DeviceInfo : DeviceCaps {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  int platformIndex = 0;
  int deviceIndex = 0;
  std::string platformName;
  std::string platformVersion;
  std::string openclVersion;   // CL_DEVICE_VERSION, e.g. "OpenCL 3.0 CUDA"
  std::string openclCVersion;  // CL_DEVICE_OPENCL_C_VERSION

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
