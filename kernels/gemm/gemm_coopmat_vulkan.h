// gemm_coopmat.comp's pipeline, its specialization constants in one place: gemm
// coopmat_f16's lowering (gemm_coopmat_vulkan.cpp) and conv winograd_f2x2_coopmat_f16's GEMM
// stage (kernels/conv/conv_winograd_vulkan.cpp) both dispatch this shader.
#pragma once

#include <string>

#include "kernels/vulkan/vulkan_lowering.h"

namespace sdspeed {

constexpr uint32_t kGemmCoopMatBindings = 6;   // x, w, bias, residual, y, split-K's partial sums
constexpr uint32_t kGemmCoopMatPushWords = 6;  // K, F, HW, epi, flags, wrows

// What the lowering sets beside the point's tiles (gemm_coopmat.comp's comment says what
// each means): GEGLU's pairs, the staging paths, the layout, split-K, and the weight format.
struct GemmCoopMatStaging {
  uint32_t pairs = 1, avec = 0, bvec = 0, layout = 0, sk = 1, acol = 0;
  vk::SpecConstant weightFormat;  // vulkanWeightFormat, or vk::specU32(20, 1) for f16
};

// The pipeline of module `module` (gemm_coopmat or its emulation) for storage f at point p
// (CM, CN, CK, WM, WN, SGM, SGN, KS, DB), with subgroup-size invocations a subgroup.
const vk::ComputePipeline& gemmCoopMatPipeline(vk::VulkanBackend& be, const std::string& module,
                                               const StorageFormat& f, const ParamPoint& p, uint32_t subgroup,
                                               const GemmCoopMatStaging& s);

}  // namespace sdspeed
