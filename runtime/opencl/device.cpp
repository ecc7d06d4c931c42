#include "runtime/opencl/device.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

std::string platformString(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  clCheck(clGetPlatformInfo(p, what, 0, nullptr, &n), "clGetPlatformInfo");
  std::string s(n, '\0');
  clCheck(clGetPlatformInfo(p, what, n, s.data(), nullptr), "clGetPlatformInfo");
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string deviceString(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  clCheck(clGetDeviceInfo(d, what, 0, nullptr, &n), "clGetDeviceInfo");
  std::string s(n, '\0');
  clCheck(clGetDeviceInfo(d, what, n, s.data(), nullptr), "clGetDeviceInfo");
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

template <typename T>
T deviceValue(cl_device_id d, cl_device_info what) {
  T v{};
  clCheck(clGetDeviceInfo(d, what, sizeof(T), &v, nullptr), "clGetDeviceInfo");
  return v;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string firstWord(const std::string& s) {
  std::string w = slug(s);
  return w.substr(0, w.find('-'));
}

DeviceInfo describe(cl_platform_id p, int pi, cl_device_id d, int di) {
  DeviceInfo info;
  info.platform = p;
  info.id = d;
  info.platformIndex = pi;
  info.deviceIndex = di;
  info.platformName = platformString(p, CL_PLATFORM_NAME);
  info.platformVersion = platformString(p, CL_PLATFORM_VERSION);
  info.name = deviceString(d, CL_DEVICE_NAME);
  info.vendor = deviceString(d, CL_DEVICE_VENDOR);
  info.driverVersion = deviceString(d, CL_DRIVER_VERSION);
  info.openclVersion = deviceString(d, CL_DEVICE_VERSION);
  info.openclCVersion = deviceString(d, CL_DEVICE_OPENCL_C_VERSION);
  info.extensions = deviceString(d, CL_DEVICE_EXTENSIONS);
  const auto type = deviceValue<cl_device_type>(d, CL_DEVICE_TYPE);
  info.type = (type & CL_DEVICE_TYPE_GPU)           ? DeviceType::Gpu
              : (type & CL_DEVICE_TYPE_CPU)         ? DeviceType::Cpu
              : (type & CL_DEVICE_TYPE_ACCELERATOR) ? DeviceType::Accelerator
                                                    : DeviceType::Other;
  info.computeUnits = deviceValue<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  info.globalMemBytes = deviceValue<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  info.maxAllocBytes = deviceValue<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  info.localMemBytes = deviceValue<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
  info.globalCacheBytes = deviceValue<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
  info.maxWorkGroupSize = deviceValue<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  cl_uint dims = deviceValue<cl_uint>(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
  info.maxWorkItemSizes.resize(dims);
  clCheck(clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t),
                          info.maxWorkItemSizes.data(), nullptr),
          "clGetDeviceInfo");
  info.imageSupport = deviceValue<cl_bool>(d, CL_DEVICE_IMAGE_SUPPORT) == CL_TRUE;
  if (info.imageSupport) {
    info.image2dMaxWidth = deviceValue<size_t>(d, CL_DEVICE_IMAGE2D_MAX_WIDTH);
    info.image2dMaxHeight = deviceValue<size_t>(d, CL_DEVICE_IMAGE2D_MAX_HEIGHT);
  }
  info.fp16 = info.hasExtension("cl_khr_fp16");
  info.fp64 = info.hasExtension("cl_khr_fp64");
  // OpenCL 3.0 reports sub-groups through CL_DEVICE_MAX_NUM_SUB_GROUPS (0 = none);
  // older devices only through the extension string.
  cl_uint maxSub = 0;
  if (clGetDeviceInfo(d, CL_DEVICE_MAX_NUM_SUB_GROUPS, sizeof(maxSub), &maxSub, nullptr) !=
      CL_SUCCESS)
    maxSub = 0;
  info.maxSubgroups = maxSub;
  info.subgroups = info.hasExtension("cl_khr_subgroups") || maxSub > 0;
  return info;
}

}  // namespace

std::string DeviceInfo::index() const {
  return std::to_string(platformIndex) + ":" + std::to_string(deviceIndex);
}

std::string DeviceInfo::key() const {
  const std::string major = slug(driverVersion.substr(0, driverVersion.find_first_of(".+ ")));
  if (platformName.find("Portable Computing Language") != std::string::npos && isCpu())
    return "opencl-pocl-cpu-" + major;
  std::string v = firstWord(vendor);  // "nvidia", "advanced" (Micro Devices) -> "amd"
  if (v == "advanced") v = "amd";
  std::string n = slug(name);
  if (n.rfind(v + "-", 0) == 0) n = n.substr(v.size() + 1);
  return "opencl-" + v + "-" + n + "-" + major;
}

std::vector<DeviceInfo> listDevices() {
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || np == 0) return {};
  clCheck(err, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(np);
  clCheck(clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");
  std::vector<DeviceInfo> out;
  for (cl_uint pi = 0; pi < np; ++pi) {
    cl_uint nd = 0;
    err = clGetDeviceIDs(platforms[pi], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd);
    if (err == CL_DEVICE_NOT_FOUND || nd == 0) continue;
    clCheck(err, "clGetDeviceIDs");
    std::vector<cl_device_id> devs(nd);
    clCheck(clGetDeviceIDs(platforms[pi], CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr),
            "clGetDeviceIDs");
    for (cl_uint di = 0; di < nd; ++di)
      out.push_back(describe(platforms[pi], static_cast<int>(pi), devs[di], static_cast<int>(di)));
  }
  return out;
}

DeviceInfo selectDevice(const std::vector<DeviceInfo>& devices, const std::string& selector) {
  if (devices.empty())
    throw Error("no OpenCL device found (is an ICD such as pocl-opencl-icd installed?)");
  if (selector.empty()) {
    for (const auto& d : devices)
      if (d.isGpu()) return d;
    return devices.front();
  }
  auto colon = selector.find(':');
  if (colon != std::string::npos) {
    int p = -1, d = -1;
    const char* s = selector.data();
    auto r1 = std::from_chars(s, s + colon, p);
    auto r2 = std::from_chars(s + colon + 1, s + selector.size(), d);
    if (r1.ec == std::errc() && r1.ptr == s + colon && r2.ec == std::errc() &&
        r2.ptr == s + selector.size()) {
      for (const auto& dev : devices)
        if (dev.platformIndex == p && dev.deviceIndex == d) return dev;
      throw Error("no OpenCL device at index " + selector + " (see `sdspeed devices`)");
    }
  }
  std::string want = lower(selector);
  for (const auto& d : devices)
    if (lower(d.name).find(want) != std::string::npos) return d;
  throw Error("no OpenCL device matches '" + selector + "' (see `sdspeed devices`)");
}

}  // namespace sdspeed
