// conv's Winograd variants on Vulkan (conv_winograd_vulkan.cpp, conv_winograd.comp); the
// conv lowering (conv_vulkan.cpp) hands them here.
#pragma once

#include "kernels/conv/conv_family.h"
#include "kernels/vulkan/vulkan_lowering.h"

namespace sdspeed {

std::unique_ptr<PreparedOp> lowerConvWinogradVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                    const ParamPoint& pt, const ConvProblem& c,
                                                    const StorageFormat& f);

}  // namespace sdspeed
