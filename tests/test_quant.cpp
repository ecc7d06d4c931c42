// The quantizer (runtime/quant/): ggml's q8_0/q4_0 rule bit for bit (bytes gguf-py's
// quantizer wrote, scripts/fixtures/make_quant_vectors.py; hand-computed blocks), the
// f16 scale rounding, round-trip error bounds, and sdspeed's row padding.
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "runtime/error.h"
#include "runtime/quant/quant.h"

using namespace sdspeed;
using namespace sdspeed::quant;

namespace {

std::vector<uint8_t> readFile(const std::string& name) {
  std::ifstream in(std::string(SDSPEED_TEST_DATA) + "/quant/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<uint8_t> quantize(Format f, const std::vector<float>& x) {
  std::vector<uint8_t> out(x.size() / kBlock * blockBytes(f));
  quantizeBlocks(f, x.data(), static_cast<int64_t>(x.size()), out.data());
  return out;
}

uint16_t scaleBits(const std::vector<uint8_t>& b, size_t block, Format f) {
  return static_cast<uint16_t>(b[block * blockBytes(f)] | (b[block * blockBytes(f) + 1] << 8));
}

}  // namespace

TEST(Quant, F16RoundingMatchesEigenHalf) {
  // Eigen::half rounds to nearest even with subnormals, as ggml's FP32_TO_FP16 does.
  std::mt19937 rng(1);
  std::vector<float> vals = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.0f, 65520.0f, 1e9f, -1e9f, 6.1e-5f, 5.96e-8f,
                             2.98e-8f, 2.99e-8f, 1e-10f, 0.1f, 1.0f / 3};
  for (int e = -30; e < 17; ++e)
    for (int i = 0; i < 200; ++i) {
      uint32_t bits = (static_cast<uint32_t>(e + 127) << 23) | (rng() & 0x7fffffu);
      float f;
      std::memcpy(&f, &bits, 4);
      vals.push_back(f);
      vals.push_back(-f);
    }
  for (float f : vals) {
    const uint16_t want = Eigen::numext::bit_cast<uint16_t>(Eigen::half(f));
    EXPECT_EQ(f32ToF16(f), want) << f;
    EXPECT_EQ(f16ToF32(want), static_cast<float>(Eigen::half(f))) << f;
  }
  EXPECT_EQ(f32ToF16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(f32ToF16(std::nanf("")) & 0x7e00, 0x7e00);
}

TEST(Quant, MatchesGgufPyBytes) {
  const auto in = readFile("input.f32");
  ASSERT_EQ(in.size(), 64u * 32 * 4);
  std::vector<float> x(in.size() / 4);
  std::memcpy(x.data(), in.data(), in.size());
  for (Format f : {Format::Q8_0, Format::Q4_0}) {
    const auto want = readFile(std::string(formatName(f)) + ".bin");
    const auto got = quantize(f, x);
    ASSERT_EQ(got.size(), want.size()) << formatName(f);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << formatName(f) << " block " << i / blockBytes(f) << " byte " << i % blockBytes(f);
  }
}

TEST(Quant, Q8KnownBlock) {
  // amax = 127 -> d = 1, q = round(x) with ties away from zero: 2.5 -> 3, -2.5 -> -3.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = -0.49f;
  x[4] = -127.0f;
  const auto b = quantize(Format::Q8_0, x);
  ASSERT_EQ(b.size(), 34u);
  EXPECT_EQ(scaleBits(b, 0, Format::Q8_0), 0x3c00);  // 1.0
  EXPECT_EQ(static_cast<int8_t>(b[2]), 127);
  EXPECT_EQ(static_cast<int8_t>(b[3]), 3);
  EXPECT_EQ(static_cast<int8_t>(b[4]), -3);
  EXPECT_EQ(static_cast<int8_t>(b[5]), 0);
  EXPECT_EQ(static_cast<int8_t>(b[6]), -127);
  for (int j = 5; j < 32; ++j) EXPECT_EQ(b[2 + j], 0);
}

TEST(Quant, Q4KnownBlock) {
  // Max magnitude -16 (negative): d = -16 / -8 = 2, id = 0.5; q = min(15, trunc(x/2 + 8.5)).
  // x = -16 -> 0; 14 -> 15; 15 -> 16 clamped to 15; 1 -> trunc(9) = 9; -1 -> trunc(8) = 8;
  // 0 -> 8. Value j in the low nibble of byte j, j + 16 in the high nibble.
  std::vector<float> x(32, 0.0f);
  x[0] = -16.0f;
  x[1] = 14.0f;
  x[16] = 15.0f;
  x[17] = 1.0f;
  x[2] = -1.0f;
  const auto b = quantize(Format::Q4_0, x);
  ASSERT_EQ(b.size(), 18u);
  EXPECT_EQ(scaleBits(b, 0, Format::Q4_0), 0x4000);  // 2.0
  EXPECT_EQ(b[2 + 0], 0x0 | (15 << 4));   // -16 | 15 (clamped)
  EXPECT_EQ(b[2 + 1], 15 | (9 << 4));     // 14 | 1
  EXPECT_EQ(b[2 + 2], 8 | (8 << 4));      // -1 | 0
  // A positive max: d = 16 / -8 = -2, so the max maps to q = 0 (value -8 * -2 = 16).
  std::vector<float> y(32, 0.0f);
  y[20] = 16.0f;
  y[21] = -16.0f;  // same magnitude, later: not the max; -16 * -0.5 + 8.5 = 16.5 -> 15
  const auto c = quantize(Format::Q4_0, y);
  EXPECT_EQ(scaleBits(c, 0, Format::Q4_0), 0xc000);  // -2.0
  EXPECT_EQ(c[2 + 4] >> 4, 0);
  EXPECT_EQ(c[2 + 5] >> 4, 15);
  std::vector<float> back(32);
  dequantizeBlocks(Format::Q4_0, c.data(), 32, back.data());
  EXPECT_EQ(back[20], 16.0f);
  EXPECT_EQ(back[21], -14.0f);  // (15 - 8) * -2: int4's asymmetric range clips it
}

TEST(Quant, AllZeroBlock) {
  const std::vector<float> x(32, 0.0f);
  for (Format f : {Format::Q8_0, Format::Q4_0}) {
    const auto b = quantize(f, x);
    // q4_0: d = 0 / -8 = -0 in f32, stored as f16 -0 (0x8000), as ggml and gguf-py do.
    EXPECT_EQ(scaleBits(b, 0, f), f == Format::Q8_0 ? 0x0000 : 0x8000);
    for (size_t i = 2; i < b.size(); ++i) EXPECT_EQ(b[i], f == Format::Q8_0 ? 0x00 : 0x88);
    std::vector<float> back(32, 1.0f);
    dequantizeBlocks(f, b.data(), 32, back.data());
    for (float v : back) EXPECT_EQ(v, 0.0f) << formatName(f);
  }
}

TEST(Quant, RoundTripErrorBounds) {
  // Per element: q8_0 |x - d q| <= d/2 (d = amax/127, plus the f16 rounding of d,
  // relative 2^-11, times |q| <= 127: 127 * 2^-11 d); q4_0 |x - d (q - 8)| <= |d|/2
  // except where the clamp at 15 bites (the positive end when the max is negative):
  // there up to |d| (x/d <= 8 maps to q - 8 = 7 at most). Both plus the scale's f16
  // rounding times |q - 8| <= 8.
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 0.05f);
  std::vector<float> x(32 * 200);
  for (auto& v : x) v = n(rng);
  for (Format f : {Format::Q8_0, Format::Q4_0}) {
    const auto b = quantize(f, x);
    std::vector<float> back(x.size());
    dequantizeBlocks(f, b.data(), static_cast<int64_t>(x.size()), back.data());
    double err2 = 0, ref2 = 0;
    for (size_t blk = 0; blk < x.size() / 32; ++blk) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[blk * 32 + j]));
      const double d = f == Format::Q8_0 ? amax / 127.0 : amax / 8.0;
      const double bound = f == Format::Q8_0 ? d / 2 + 127 * d * std::ldexp(1.0, -11) : d + 8 * d * std::ldexp(1.0, -11);
      for (int j = 0; j < 32; ++j) {
        const size_t i = blk * 32 + j;
        ASSERT_LE(std::fabs(x[i] - back[i]), bound * 1.0001) << formatName(f) << " element " << i;
        err2 += (x[i] - back[i]) * double(x[i] - back[i]);
        ref2 += double(x[i]) * x[i];
      }
    }
    // Gaussian weights: the step is ~ amax/127 (q8) or amax/8 (q4) with amax ~ 2.1
    // sigma for 32 draws; uniform rounding error step/sqrt(12) relative to sigma:
    // ~0.5% (q8) and ~7.5% (q4). Bounds with margin.
    const double rel = std::sqrt(err2 / ref2);
    EXPECT_LT(rel, f == Format::Q8_0 ? 0.01 : 0.12) << formatName(f);
    EXPECT_GT(rel, f == Format::Q8_0 ? 0.001 : 0.03) << formatName(f);  // it does quantize
  }
}

TEST(Quant, ExtremeValues) {
  // Scales at the f16 limits: amax 65504 * 127 overflows d to inf in f16 (ggml stores
  // inf too); tiny values give a subnormal or zero d, and then dequantize to 0 or near.
  std::vector<float> x(32, 1.0f);
  x[0] = 60000.0f;
  auto b = quantize(Format::Q8_0, x);
  EXPECT_EQ(scaleBits(b, 0, Format::Q8_0), f32ToF16(60000.0f / 127));
  std::vector<float> t(32, 1e-9f);
  b = quantize(Format::Q8_0, t);
  EXPECT_EQ(scaleBits(b, 0, Format::Q8_0), 0);  // 7.9e-12 is under half of f16's 2^-24
  EXPECT_EQ(static_cast<int8_t>(b[2]), 127);    // q from the f32 reciprocal, as in ggml
}

TEST(Quant, RowsPadToWholeBlocks) {
  // 3 rows of 36 (the UNet's first conv: 4 x 3 x 3): 2 blocks per row, the last one
  // zero-padded; padding leaves each row's values as if quantized alone.
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(3 * 36);
  for (auto& v : x) v = n(rng);
  for (Format f : {Format::Q8_0, Format::Q4_0}) {
    const MatrixLayout l{f, 3, 36};
    EXPECT_EQ(l.blocksPerRow(), 2);
    EXPECT_EQ(l.bytes(), 3 * 2 * blockBytes(f));
    const auto q = quantizeMatrix(l, x.data(), x.size(), "w");
    for (int r = 0; r < 3; ++r) {
      std::vector<float> row(64, 0.0f);
      std::copy(x.begin() + r * 36, x.begin() + (r + 1) * 36, row.begin());
      const auto alone = quantize(f, row);
      EXPECT_TRUE(std::equal(alone.begin(), alone.end(), q.begin() + r * 2 * blockBytes(f))) << formatName(f) << r;
    }
    const auto back = dequantizeMatrix(l, q.data(), q.size(), "w");
    ASSERT_EQ(back.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(back[i], x[i], f == Format::Q8_0 ? 0.03 : 0.4);
  }
}

TEST(Quant, BadInputIsOneError) {
  std::vector<float> x(40, 1.0f);
  x[37] = std::nanf("");
  try {
    quantizeMatrix({Format::Q8_0, 1, 40}, x.data(), x.size(), "unet.conv_in.weight");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unet.conv_in.weight: element 37 is not finite"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(quantizeMatrix({Format::Q4_0, 2, 40}, x.data(), x.size(), "w"), Error);  // 80 values wanted
  std::vector<uint8_t> b(17);
  EXPECT_THROW(dequantizeMatrix({Format::Q4_0, 1, 32}, b.data(), b.size(), "w"), Error);
}
