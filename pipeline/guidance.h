// Classifier-free guidance: noise = uncond + scale * (cond - uncond), in float32 in
// that order (as StableDiffusionPipeline computes it).
#pragma once

#include <span>
#include <vector>

namespace sdspeed {

std::vector<float> classifierFreeGuidance(std::span<const float> uncond, std::span<const float> cond, float scale);
// The UNet output of the batch [uncond; cond] (two halves of one buffer).
std::vector<float> classifierFreeGuidance(std::span<const float> batchedNoise, float scale);

}  // namespace sdspeed
