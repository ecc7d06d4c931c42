// Comparing a pipeline's tensors with the fixtures' diffusers references
// (tests/data/tiny-sd-*/README.md), shared by the OpenCL and Vulkan pipeline tests.
//
// The rule for a float32 implementation: relative L2 error below max(1e-4, 10x the
// float32-vs-float64 relative difference) and every element within 10x the
// float32-vs-float64 max abs difference of that tensor (different summation orders and
// fused kernels legitimately differ by that much; the README's table is the floor of
// what an exact float32 re-implementation drifts).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace sdspeed {

struct Spread {
  double maxAbs, relL2;  // float32 vs float64 (the fixture's f32_vs_f64.json)
};

inline void expectClose(const std::vector<float>& got, const std::vector<float>& want, Spread f64,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double num = 0, den = 0, worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(static_cast<double>(got[i]) - want[i]);
    ASSERT_TRUE(std::isfinite(got[i])) << what << " element " << i;
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
    if (d > worst) worst = d, at = i;
  }
  const double rel = std::sqrt(num / den);
  EXPECT_LE(rel, std::max(1e-4, 10 * f64.relL2)) << what;
  EXPECT_LE(worst, 10 * f64.maxAbs) << what << ": worst element " << at << " got " << got[at] << " want " << want[at];
  std::printf("%-30s rel L2 %.3g, max abs %.3g (f32 vs f64: %.3g, %.3g)\n", what.c_str(), rel, worst, f64.relL2,
              f64.maxAbs);
}

// The test-name suffix of a fixture parameter ("tiny-sd-a", "tiny-sd-a/single_file",
// "tiny-sd-b").
inline std::string fixtureTestName(const ::testing::TestParamInfo<std::string>& info) {
  return info.param == "tiny-sd-a"   ? std::string("TinySdA")
         : info.param == "tiny-sd-b" ? std::string("TinySdB")
                                     : std::string("TinySdASingleFile");
}

inline double relL2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

}  // namespace sdspeed
