#include <iostream>

#include "cli/commands.h"
#include "cli/table.h"
#include "runtime/cl_error.h"
#include "runtime/device.h"

namespace sdspeed {

DeviceInfo deviceFromArgs(const Args& args) { return selectDevice(listDevices(), args.get("device")); }

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
  const int llcMib = args.getInt("llc-mib", 0);
  if (llcMib < 0) throw Error("--llc-mib must not be negative");
  if (policy.minTotalMs < 0 || policy.warmup < 0) throw Error("--min-ms and --warmup must not be negative");
  policy.llcBytes = static_cast<uint64_t>(llcMib) << 20;
  return policy;
}

namespace {

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }
std::string kib(uint64_t bytes) { return std::to_string(bytes >> 10) + " KiB"; }

}  // namespace

int cmdDevices(const std::vector<std::string>& argv) {
  Args args(argv, {"device"}, {"help"});
  if (args.has("help")) {
    std::cout << "usage: sdspeed devices\nLists every OpenCL device; * marks the default "
                 "(or the one --device selects).\n";
    return 0;
  }
  const auto devices = listDevices();
  if (devices.empty()) throw Error("no OpenCL device found (is an ICD such as pocl-opencl-icd installed?)");
  const DeviceInfo chosen = selectDevice(devices, args.get("device"));
  for (const auto& d : devices) {
    const bool mark = d.platform == chosen.platform && d.id == chosen.id;
    std::cout << (mark ? "* " : "  ") << d.index() << "  " << d.name << "  (" << d.typeName() << ")\n";
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
  return 0;
}

}  // namespace sdspeed
