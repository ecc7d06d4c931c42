// Device ceilings (`sdspeed roofline`): copy bandwidth (bytes read + written per
// second, a large buffer copy) and fp32 FMA rate (2 FLOP per FMA), each checked for
// correctness and timed like an op (runtime/timing.h). Stored per device in
// configs/devices/<device-key>.yaml, so every benchmark can report "% of ceiling".
#pragma once

#include <cstdint>
#include <cstddef>
#include <string>
#include <vector>

#include "runtime/opencl/context.h"
#include "runtime/timing.h"

namespace sdspeed {

struct Ceilings {
  std::string deviceKey, deviceName, driver;
  double copyGBs = 0;      // GB/s, read + write
  double fmaGflops = 0;    // GFLOP/s
  size_t copyBytes = 0;    // buffer size used
  // Vulkan only (0 elsewhere, and absent from the file): the time per dispatch of a chain
  // of tiny ones (one work-group copying 1 KiB), recorded three ways. `timed`: as ops are
  // recorded (a barrier and two timestamps each); `barrier`: the barrier alone; `free`:
  // independent dispatches, neither. What a graph of many small ops pays per dispatch.
  double dispatchTimedUs = 0, dispatchBarrierUs = 0, dispatchFreeUs = 0;
};

// copyBytes: size of each of the two buffers (clamped to the device's allocation limit).
// On OpenCL (roofline.cl) or Vulkan (roofline.comp, tuning/roofline_vulkan.cpp).
Ceilings measureCeilings(Backend& backend, size_t copyBytes, const TimingPolicy& policy);
Ceilings measureCeilingsCl(Context& ctx, size_t copyBytes, const TimingPolicy& policy);
Ceilings measureCeilingsVulkan(Backend& backend, size_t copyBytes, const TimingPolicy& policy);
// Shared by both: the copy's input (copyBytes of floats in [1, 2)), and the check of the
// FMA chains' results against the same chains on the host (Error when one is off).
std::vector<float> rooflineCopyData(size_t copyBytes);
// The copy buffers' size: `requested` within the device's allocation limit, rounded down
// to whole float4s (the kernels copy 16 bytes per item); Error when under 16 bytes.
size_t rooflineCopyBytes(size_t requested, uint64_t maxAllocBytes);
void checkRooflineFma(const std::vector<float>& got, int iters, float a, float b);
void saveCeilings(const Ceilings& c, const std::string& path);  // atomic
// Throws Error naming the file and key when malformed; returns false when absent.
bool loadCeilings(const std::string& path, Ceilings& c);

}  // namespace sdspeed
