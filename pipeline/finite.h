// Finding the first NaN or infinity in host values: what the non-finite guards share
// (weights at load, --init-latents, the latents after each denoising step, the decoded
// image, and --check-finite's per-op outputs). A NaN image written with exit status 0
// is a wrong answer; these turn it into one error line naming where it began.
#pragma once

#include <cmath>
#include <cstddef>
#include <span>
#include <string>

namespace sdspeed {

// The index of the first NaN or infinity, or values.size() when every value is finite.
inline size_t firstNonFinite(std::span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) return i;
  return values.size();
}

// "nan", "inf" or "-inf": how an error line names the value it found.
inline std::string nonFiniteName(float v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

// "nan at element 12 of 4096": the value and where, for an error line.
inline std::string nonFiniteAt(std::span<const float> values, size_t i) {
  return nonFiniteName(values[i]) + " at element " + std::to_string(i) + " of " + std::to_string(values.size());
}

}  // namespace sdspeed
