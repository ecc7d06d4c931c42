// Device records for tests of the cooperative-matrix gate and the default variant order,
// without a device: a Vulkan device with the H200's limits, with and without its
// cooperative-matrix list (../shared/vulkan/h200-cooperative-matrix-properties.txt).
#pragma once

#include <cstdint>

#include "runtime/device_caps.h"

namespace sdspeed::testing_caps {

inline CoopMatShape coopMatShape(const char* ext, uint32_t m, uint32_t n, uint32_t k, const char* ab, const char* cd) {
  return {ext, m, n, k, ab, ab, cd, cd, "subgroup"};
}

// The H200's limits (shared memory 48 KiB, work-groups of 1024, subgroups of 32,
// shaderFloat16) and no cooperative matrices.
inline DeviceCaps vulkanDevice() {
  DeviceCaps d;
  d.api = "vulkan";
  d.maxWorkGroupSize = 1024;
  d.maxWorkItemSizes = {1024, 1024, 64};
  d.localMemBytes = 49152;
  d.fp16 = true;
  d.storage16 = true;
  d.subgroupSize = 32;
  d.maxAllocBytes = uint64_t{1} << 32;
  d.globalMemBytes = uint64_t{141} << 30;
  return d;
}

// The H200's list: NV and KHR, f16 inputs with f16 or f32 accumulators, and the integer
// shapes (which an f16 variant must never pick).
inline DeviceCaps h200() {
  DeviceCaps d = vulkanDevice();
  d.cooperativeMatrix = true;
  for (const char* ext : {"NV", "KHR"}) {
    for (const char* acc : {"f16", "f32"}) {
      d.coopMat.push_back(coopMatShape(ext, 16, 16, 16, "f16", acc));
      d.coopMat.push_back(coopMatShape(ext, 16, 8, 16, "f16", acc));
      d.coopMat.push_back(coopMatShape(ext, 16, 8, 8, "f16", acc));
    }
    d.coopMat.push_back(coopMatShape(ext, 16, 16, 32, "s8", "s32"));
    d.coopMat.push_back(coopMatShape(ext, 16, 8, 32, "u8", "u32"));
  }
  return d;
}

}  // namespace sdspeed::testing_caps
