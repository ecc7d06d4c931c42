// f16-arithmetic variants (issue #21 item 3): the half twin of an f32 variant, declared
// as data like every other variant. It keeps the base's parameters, constraints and
// device rules, is named <base>_f16, computes in half (VariantDef::arithmetic = {f16}),
// needs cl_khr_fp16 (a device without it makes every point unsupported, "device lacks
// cl_khr_fp16", which `sdspeed check` prints as a skipped: line), and defines SD_HALF in
// its program: the family's .cl selects its half kernels with #ifdef SD_HALF, so the
// f32 variants' programs and results are unchanged. What each family still
// accumulates in f32, and why, is said in its .cl and in kernels/README.md.
#pragma once

#include <algorithm>
#include <string>

#include "kernels/family.h"

namespace sdspeed {

// The suffix of a half twin's name.
inline constexpr const char* kHalfSuffix = "_f16";

inline VariantDef halfVariant(VariantDef base, const std::string& summary) {
  base.name += kHalfSuffix;
  base.summary = summary;
  base.arithmetic = {DType::F16};
  base.requiredExtensions.push_back("cl_khr_fp16");
  base.defines["SD_HALF"] = 1;
  return base;
}

// True for a variant whose kernels compute in half (its tolerance is the f16 one).
inline bool computesInHalf(const VariantDef& v) {
  return std::find(v.arithmetic.begin(), v.arithmetic.end(), DType::F16) != v.arithmetic.end();
}

// The name of the f32 variant a half twin was made from (`v`'s own name otherwise): the
// Vulkan lowerings serve both twins with one shader, its arithmetic chosen by the format.
inline std::string baseVariantName(const VariantDef& v) {
  const std::string suffix = kHalfSuffix;
  if (v.name.size() > suffix.size() && v.name.compare(v.name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return v.name.substr(0, v.name.size() - suffix.size());
  return v.name;
}

// Half's unit roundoff: 11 significant bits, round to nearest, u = 2^-11 = 4.9e-4 (f32's
// is 2^-24 = 6e-8). The families' f16-arithmetic tolerances are written in units of it.
inline constexpr double kHalfUnitRoundoff = 1.0 / 2048;

}  // namespace sdspeed
