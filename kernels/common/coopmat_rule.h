// The device rule the cooperative-matrix variants share (gemm and conv coopmat_f16,
// attention flash_coopmat_f16): Vulkan only, the device's cooperative matrices, the NV
// shape CM x CN x CK with A = B = f16, C = D = f32 at subgroup scope in its list, and
// 32-invocation subgroups (the shaders pick a subgroup's tile by gl_SubgroupID).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/device_caps.h"

namespace sdspeed {

// "" when `dev` can run the shape; else the reason, in the words `check` prints:
// "<what> has no <api> kernels (...)", "device lacks cooperative matrices",
// "device lacks cooperative-matrix shape ...", "<variant> assumes 32-invocation subgroups ...".
std::string coopMatF16DeviceRule(const std::string& what, const std::string& variant, uint32_t m, uint32_t n,
                                 uint32_t k, const DeviceCaps& dev);

// f32 accumulators a subgroup keeps in registers, at most: 16 of CM x CN = 16 x 16 are 128
// registers a lane (of 255). gemm and conv coopmat_f16's WM x WN (x 2 under GEGLU),
// attention flash_coopmat_f16's O accumulators.
inline constexpr int kCoopMatMaxAccumulators = 16;

}  // namespace sdspeed
