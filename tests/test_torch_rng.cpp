// pipeline/torch_rng.*: torch.manual_seed(N) + torch.randn on the CPU.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "pipeline/safetensors.h"
#include "pipeline/torch_rng.h"

using sdspeed::TorchCpuKernel;
using sdspeed::TorchGenerator;

namespace {
int64_t ulpDistance(float a, float b) {
  auto key = [](float v) {  // monotonic integer order of floats
    int32_t i = std::bit_cast<int32_t>(v);
    return i < 0 ? int64_t(INT32_MIN) - i : int64_t(i);
  };
  return std::llabs(key(a) - key(b));
}
}  // namespace

// The fixture's init_latents: torch.manual_seed(1234); torch.randn(1, 4, 16, 16) made
// by torch 2.11 on an x86 CPU (AVX2 kernel). Reproduced bit for bit: all 1024 equal.
TEST(TorchRng, ReproducesFixtureInitLatentsBitwise) {
  sdspeed::SafetensorsFile ref(std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a/reference.safetensors");
  std::vector<float> expected = ref.toFloat("init_latents");
  std::vector<float> got = sdspeed::torchRandn(1234, {1, 4, 16, 16});
  ASSERT_EQ(got.size(), expected.size());
  int differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(expected[i]);
  EXPECT_EQ(differ, 0);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(got[i], expected[i]) << i;

  // The libm path (torch builds without the AVX2 kernel) differs only in the last bits.
  std::vector<float> scalar = sdspeed::torchRandn(1234, {1, 4, 16, 16}, TorchCpuKernel::Scalar);
  int64_t worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, ulpDistance(scalar[i], expected[i]));
  EXPECT_LE(worst, 512);
}

TEST(TorchRng, EngineIsMt19937AndUniformsUseTorchBits) {
  TorchGenerator g(1234);
  std::mt19937 ref(1234);
  EXPECT_EQ(g.random(), ref());
  uint64_t hi = ref(), lo = ref();
  EXPECT_EQ(g.random64(), (hi << 32) | lo);
  uint32_t r = ref();
  EXPECT_EQ(g.uniformFloat(), static_cast<float>(r & 0xffffff) / 16777216.0f);
  // the seed's high 32 bits are ignored, as in at::mt19937
  EXPECT_EQ(TorchGenerator((uint64_t(7) << 32) | 5).random(), TorchGenerator(5).random());
}

TEST(TorchRng, TailOfNonMultipleOf16IsRecomputedFromFreshUniforms) {
  TorchGenerator a(42), b(42);
  std::vector<float> n20 = a.randn(20);
  std::vector<float> n16 = b.randn(16);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(n20[i], n16[i]);  // first block: same uniforms
  EXPECT_NE(n20[4], n16[4]);                                // elements 4..19 come from draws 20..35
  TorchGenerator c(42);
  for (int i = 0; i < 20; ++i) c.random();
  std::vector<float> fresh16 = c.randn(16);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(n20[4 + i], fresh16[i]);
  // and the generator advanced by 20 + 16 draws
  std::mt19937 ref(42);
  ref.discard(36);
  EXPECT_EQ(a.random(), ref());
}

// Fewer than 16 elements: double Box-Muller with the cached sine value.
// torch.manual_seed(0); torch.randn(4) -> [1.5410, -0.2934, -2.1788, 0.5684].
TEST(TorchRng, SmallTensorsUseTheDoublePath) {
  std::vector<float> v = sdspeed::torchRandn(0, {4});
  const float expected[] = {1.5410f, -0.2934f, -2.1788f, 0.5684f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(v[i], expected[i], 1e-4) << i;
  TorchGenerator g(0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(g.randn(1)[0], v[i]) << "one at a time, through the cache";
}

TEST(TorchRng, StatisticsLookNormal) {
  std::vector<float> v = sdspeed::torchRandn(7, {1, 4, 64, 64});
  double sum = 0, sq = 0;
  for (float x : v) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += double(x) * x;
  }
  double mean = sum / v.size(), var = sq / v.size() - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(var, 1.0, 0.05);
}
