#include "pipeline/guidance.h"

#include <string>

#include "runtime/error.h"

namespace sdspeed {

std::vector<float> classifierFreeGuidance(std::span<const float> uncond, std::span<const float> cond, float scale) {
  if (uncond.size() != cond.size())
    throw Error("classifier-free guidance: uncond has " + std::to_string(uncond.size()) + " values, cond " +
                std::to_string(cond.size()));
  std::vector<float> out(uncond.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = uncond[i] + scale * (cond[i] - uncond[i]);
  return out;
}

std::vector<float> classifierFreeGuidance(std::span<const float> batched, float scale) {
  if (batched.size() % 2 != 0)
    throw Error("classifier-free guidance: the batched noise has an odd number of values (" +
                std::to_string(batched.size()) + ")");
  const size_t half = batched.size() / 2;
  return classifierFreeGuidance(batched.first(half), batched.subspan(half), scale);
}

}  // namespace sdspeed
