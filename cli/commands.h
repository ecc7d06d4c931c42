// The sdspeed verbs. Each returns the process exit code; errors are thrown as
// sdspeed::Error and reported by main() as one line.
#pragma once

#include <string>
#include <vector>

#include "cli/args.h"
#include "runtime/opencl/context.h"
#include "runtime/tensor_desc.h"
#include "runtime/timing.h"

namespace sdspeed {

int cmdDevices(const std::vector<std::string>& argv);
int cmdCheck(const std::vector<std::string>& argv);
int cmdBench(const std::vector<std::string>& argv);
int cmdTune(const std::vector<std::string>& argv);
int cmdRoofline(const std::vector<std::string>& argv);
int cmdDb(const std::vector<std::string>& argv);  // merge/compare databases and sweep caches
#ifdef SDSPEED_WITH_PIPELINE
int cmdRun(const std::vector<std::string>& argv);
int cmdShapes(const std::vector<std::string>& argv);
int cmdQuantize(const std::vector<std::string>& argv);
int cmdAblate(const std::vector<std::string>& argv);
#endif

// Shared by verbs that use one device: --device, --kernel-dir, --cache-dir, --no-disk-cache.
// --backend opencl|vulkan (default: vulkan for --device vulkan:N, else opencl).
inline const std::set<std::string> kDeviceOptions = {"device", "kernel-dir", "cache-dir", "backend"};
inline const std::set<std::string> kDeviceFlags = {"no-disk-cache"};
// The backend (runtime/backend.h) --backend and --device choose: every verb that runs
// kernels (check, bench, tune, run, ablate, roofline) runs on either API.
std::unique_ptr<Backend> backendFromArgs(const Args& args);
// The API --backend and --device name: "opencl" or "vulkan" (one error line on a mismatch).
std::string backendNameFromArgs(const Args& args);
// The backend of `api` ("opencl", "vulkan"): backendFromArgs when --backend names it,
// else that API's first device (an ablation row's `backend` key).
std::unique_ptr<Backend> backendForApi(const Args& args, const std::string& api);
// --attrs NAME=VALUE,.. as a map; throws Error for an item without '='.
std::map<std::string, std::string> attrsFromArgs(const Args& args);
// --min-ms, --warmup, --llc-mib (bench and tune).
TimingPolicy timingPolicyFromArgs(const Args& args);
ContextOptions contextOptionsFromArgs(const Args& args);
// --weights f32,f16 (check, bench, tune): each of `formats` once per weight format
// listed, in that order; without --weights, `formats` as given (f32 weights unless a
// 4-part --storage named others). Throws Error naming --weights for a bad item.
std::vector<StorageFormat> withWeightFormatsFromArgs(const Args& args, const std::vector<StorageFormat>& formats);
// --arithmetic f32,f16 (check, bench, tune): each of `formats` once per arithmetic
// listed (after the weight formats); without it, f32 (or what a --storage part named).
std::vector<StorageFormat> withArithmeticFromArgs(const Args& args, const std::vector<StorageFormat>& formats);

}  // namespace sdspeed
