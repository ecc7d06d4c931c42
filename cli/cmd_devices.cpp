#include <algorithm>
#include <iostream>

#include "cli/commands.h"
#include "cli/table.h"
#include "runtime/opencl/cl_error.h"
#include "runtime/opencl/device.h"
#ifdef SDSPEED_WITH_VULKAN
#include "runtime/vulkan/backend.h"
#include "runtime/vulkan/device_info.h"
#include "runtime/vulkan/instance.h"
#endif

namespace sdspeed {

namespace {

// Device names (`sdspeed devices --help`): "opencl:P:D" or plain "P:D" (OpenCL platform
// P, device D), "vulkan:N" (the Vulkan loader's N-th device), or a name substring, which
// selects among OpenCL devices.
std::string openclSelector(const std::string& s) { return s.rfind("opencl:", 0) == 0 ? s.substr(7) : s; }
bool isVulkanSelector(const std::string& s) { return s.rfind("vulkan:", 0) == 0; }

}  // namespace

std::string backendNameFromArgs(const Args& args) {
  const std::string sel = args.get("device");
  if (!args.has("backend")) return isVulkanSelector(sel) ? "vulkan" : "opencl";
  const std::string b = args.get("backend");
  if (b != "opencl" && b != "vulkan") throw Error("--backend " + b + ": want opencl or vulkan");
  if (b == "opencl" && isVulkanSelector(sel)) throw Error("--device " + sel + " is a Vulkan device, --backend is opencl");
  if (b == "vulkan" && !sel.empty() && (sel.rfind("opencl:", 0) == 0 || sel.find(':') != std::string::npos) &&
      !isVulkanSelector(sel))
    throw Error("--device " + sel + " is an OpenCL device, --backend is vulkan (Vulkan devices are vulkan:N)");
  return b;
}

namespace {

// The one place a backend is made: `api`'s device `device` ("": its first one).
// `kernelDirIsError`: --kernel-dir was given for this API (Vulkan's shaders are compiled
// in, so naming a kernel folder for it is a mistake, not something to ignore).
std::unique_ptr<Backend> makeBackend(const std::string& api, const std::string& device, const ContextOptions& opts,
                                     bool kernelDirIsError) {
  if (api == "opencl") return std::make_unique<Context>(selectDevice(listDevices(), openclSelector(device)), opts);
  if (api != "vulkan") throw Error("backend " + api + ": want opencl or vulkan");
#ifdef SDSPEED_WITH_VULKAN
  if (kernelDirIsError && !opts.kernelDir.empty())
    throw Error("--kernel-dir: Vulkan shaders are compiled into the binary at build time; rebuild instead");
  // selectVulkanDevice reads "vulkan:N" itself (and refuses "vulkan:" or "vulkan:abc").
  return std::make_unique<vk::VulkanBackend>(device, opts.cacheDir);
#else
  (void)kernelDirIsError;
  throw Error("--backend vulkan: this build has no Vulkan backend (it needs libvulkan-dev and glslc at configure time)");
#endif
}

}  // namespace

std::unique_ptr<Backend> backendFromArgs(const Args& args) {
  return makeBackend(backendNameFromArgs(args), args.get("device"), contextOptionsFromArgs(args), true);
}

std::unique_ptr<Backend> backendForApi(const Args& args, const std::string& api) {
  if (api == backendNameFromArgs(args)) return backendFromArgs(args);
  // The other API: its first device (--device names one device of one API); --kernel-dir
  // is the command's API's (an OpenCL ablation's Vulkan row ignores it, as before).
  return makeBackend(api, "", contextOptionsFromArgs(args), false);
}

ContextOptions contextOptionsFromArgs(const Args& args) {
  ContextOptions o;
  o.kernelDir = args.get("kernel-dir");
  if (args.has("cache-dir")) o.cacheDir = args.get("cache-dir");
  if (args.has("no-disk-cache")) o.cacheDir.clear();
  return o;
}

std::map<std::string, std::string> attrsFromArgs(const Args& args) {
  std::map<std::string, std::string> attrs;
  for (const auto& kv : args.list("attrs")) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("bad attribute '" + kv + "' (want NAME=VALUE)");
    attrs[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return attrs;
}

std::vector<StorageFormat> withWeightFormatsFromArgs(const Args& args, const std::vector<StorageFormat>& formats) {
  if (!args.has("weights")) return formats;
  const std::vector<DType> weights = parseDTypeList(args.get("weights"), "--weights");
  std::vector<StorageFormat> out;
  for (const auto& f : formats)
    for (DType w : weights) out.push_back(f.withWeights(w));
  return out;
}

std::vector<StorageFormat> withArithmeticFromArgs(const Args& args, const std::vector<StorageFormat>& formats) {
  if (!args.has("arithmetic")) return formats;
  const std::vector<DType> arithmetic = parseDTypeList(args.get("arithmetic"), "--arithmetic");
  std::vector<StorageFormat> out;
  for (const auto& f : formats)
    for (DType a : arithmetic) out.push_back(f.withArithmetic(a));
  return out;
}

TimingPolicy timingPolicyFromArgs(const Args& args) {
  TimingPolicy policy;
  policy.minTotalMs = args.getInt("min-ms", 50);
  policy.warmup = args.getInt("warmup", 3);
  // Timed warm-up (runtime/timing.h: clocks ramp up only after ~0.8 s of work on an
  // H200): 1000 ms at the default --min-ms, 20 x --min-ms below it (20 ms for the tests'
  // --min-ms 1). CPU devices skip it (TimingPolicy::warmupOnCpu) unless it is asked for.
  policy.warmupMs = args.getInt("warmup-ms", static_cast<int>(std::min(1000.0, 20 * policy.minTotalMs)));
  policy.warmupOnCpu = args.has("warmup-ms");
  const int llcMib = args.getInt("llc-mib", 0);
  if (llcMib < 0) throw Error("--llc-mib must not be negative");
  if (policy.minTotalMs < 0 || policy.warmup < 0 || policy.warmupMs < 0)
    throw Error("--min-ms, --warmup and --warmup-ms must not be negative");
  policy.llcBytes = static_cast<uint64_t>(llcMib) << 20;
  return policy;
}

namespace {

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }
std::string kib(uint64_t bytes) { return std::to_string(bytes >> 10) + " KiB"; }

}  // namespace

#ifdef SDSPEED_WITH_VULKAN
namespace {

// The Vulkan devices, or none when no Vulkan driver is installed. A Vulkan failure is
// one warning line: it must not hide the OpenCL devices.
std::vector<vk::VulkanDeviceInfo> vulkanDevices(std::shared_ptr<vk::Instance>& instance) {
  try {
    instance = vk::Instance::create();
    return instance ? vk::listVulkanDevices(*instance) : std::vector<vk::VulkanDeviceInfo>{};
  } catch (const Error& e) {
    std::cerr << "sdspeed: warning: Vulkan devices not listed: " << e.what() << "\n";
    return {};
  }
}

void printVulkanDevice(const vk::VulkanDeviceInfo& d, bool mark) {
  std::cout << (mark ? "* " : "  ") << d.selector() << "  " << d.name << "  (" << d.typeName() << ")\n";
  TextTable t({"    property", "value"});
  for (const auto& [property, value] : d.report()) t.add({property.empty() ? "" : "    " + property, value});
  t.print(std::cout);
}

}  // namespace
#endif

int cmdDevices(const std::vector<std::string>& argv) {
  Args args(argv, {"device"}, {"help"});
  if (args.has("help")) {
    std::cout << "usage: sdspeed devices [--device NAME]\n"
                 "Lists every OpenCL device, then every Vulkan device; * marks the default (or the one\n"
                 "--device selects). Devices are named API:INDEX, one scheme for both APIs:\n"
                 "  opencl:P:D  OpenCL platform P, device D (plain P:D means the same)\n"
                 "  vulkan:N    the Vulkan loader's device N\n"
                 "A GPU with both drivers appears once under each API, with a key per API\n"
                 "(opencl-nvidia-h200-580, vulkan-nvidia-h200-580). A name substring selects among\n"
                 "OpenCL devices. The default is OpenCL's (the first GPU, else the first device):\n"
                 "the kernel families run on OpenCL, so without an OpenCL device this exits 2.\n";
    return 0;
  }
  const std::string sel = args.get("device");
  // OpenCL's failure (no device; no library in a dlopen build) is reported after the
  // Vulkan devices are listed, and only when the selection is an OpenCL one.
  std::vector<DeviceInfo> devices;
  std::string openclError;
  try {
    devices = listDevices();
    if (devices.empty()) openclError = "no OpenCL device found (is an ICD such as pocl-opencl-icd installed?)";
  } catch (const Error& e) {
    openclError = e.what();
  }
  // Selection first: a bad --device is one error line before any listing.
  DeviceInfo chosen;
  if (!isVulkanSelector(sel) && openclError.empty()) chosen = selectDevice(devices, openclSelector(sel));
#ifdef SDSPEED_WITH_VULKAN
  std::shared_ptr<vk::Instance> instance;
  const auto vkDevices = vulkanDevices(instance);
  const vk::VulkanDeviceInfo* vkChosen = isVulkanSelector(sel) ? &vk::selectVulkanDevice(vkDevices, sel) : nullptr;
#else
  if (isVulkanSelector(sel)) throw Error("--device " + sel + ": this sdspeed was built without Vulkan");
#endif
  for (const auto& d : devices) {
    const bool mark = d.platform == chosen.platform && d.id == chosen.id;
    std::cout << (mark ? "* " : "  ") << "opencl:" << d.index() << "  " << d.name << "  (" << d.typeName() << ")\n";
    TextTable t({"    property", "value"});
    t.add({"    platform", d.platformName + " / " + d.platformVersion});
    t.add({"    vendor", d.vendor});
    t.add({"    driver", d.driverVersion});
    t.add({"    OpenCL", d.openclVersion + " (" + d.openclCVersion + ")"});
    t.add({"    compute units", std::to_string(d.computeUnits)});
    t.add({"    global memory", mib(d.globalMemBytes) + " (max alloc " + mib(d.maxAllocBytes) + ")"});
    t.add({"    global cache", kib(d.globalCacheBytes)});
    t.add({"    local memory", kib(d.localMemBytes)});
    t.add({"    max work-group", std::to_string(d.maxWorkGroupSize)});
    t.add({"    images", d.imageSupport ? "yes (2D max " + std::to_string(d.image2dMaxWidth) + "x" +
                                              std::to_string(d.image2dMaxHeight) + ")"
                                        : "no"});
    t.add({"    fp16 arithmetic", d.fp16 ? "yes (cl_khr_fp16)" : "no (f16 storage only)"});
    t.add({"    fp64", d.fp64 ? "yes" : "no"});
    t.add({"    subgroups", d.subgroups ? "yes (max " + std::to_string(d.maxSubgroups) + " per work-group)" : "no"});
    t.add({"    key", d.key()});
    t.print(std::cout);
  }
#ifdef SDSPEED_WITH_VULKAN
  for (const auto& d : vkDevices) printVulkanDevice(d, &d == vkChosen);
#endif
  if (!isVulkanSelector(sel) && !openclError.empty()) throw Error(openclError);
  return 0;
}

}  // namespace sdspeed
