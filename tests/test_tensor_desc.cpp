// Tensor descriptors on the host: shape parsing, storage format names, the physical
// layout arithmetic of NCHW and NC4HW4, and host packing (f32 / f16, padding lanes).
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <set>

#include "kernels/family.h"
#include "runtime/opencl/cl_error.h"
#include "runtime/opencl/tensor.h"
#include "runtime/tensor_desc.h"
#include "test_support.h"

using namespace sdspeed;

namespace {

float halfRound(float v) { return static_cast<float>(Eigen::half(v)); }

}  // namespace

// ---------------------------------------------------------------- parseShape

TEST(ParseShape, AcceptsNxCxHxW) {
  EXPECT_EQ(parseShape("2x320x64x64"), (Shape{2, 320, 64, 64}));
  EXPECT_EQ(parseShape("1x1x1x1"), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(parseShape("3x7x1x129"), (Shape{3, 7, 1, 129}));
  Shape s = parseShape("2x6x5x7");
  EXPECT_EQ(s.hw(), 35);
  EXPECT_EQ(s.elements(), 2 * 6 * 35);
  EXPECT_EQ(s.slices(), 2);
  EXPECT_EQ(s.text(), "2x6x5x7");
  EXPECT_EQ(parseShape(s.text()), s);
}

TEST(ParseShape, RejectsMalformedText) {
  for (const std::string bad :
       {"", "2x3x4", "2x3x4x5x6", "2x3x4x", "x2x3x4", "0x1x1x1", "1x0x1x1", "1x1x1x0", "-1x2x3x4",
        "2x-3x4x5", "ax3x4x5", "2X3X4X5", "2*3*4*5", "2x3x4x5 ", " 2x3x4x5", "2x3x4x5junk",
        "2x3.5x4x5", "2xx3x4x5", "99999999999999999999x1x1x1"}) {
    SCOPED_TRACE("'" + bad + "'");
    std::string msg = sdspeed_test::errorMessage([&] { parseShape(bad); });
    EXPECT_NE(msg.find("bad shape"), std::string::npos) << msg;
    EXPECT_NE(msg.find("NxCxHxW"), std::string::npos) << msg;
  }
}

// ---------------------------------------------------------------- StorageFormat

TEST(StorageFormat, ParsesEveryNameAndRoundTrips) {
  struct Want {
    const char* name;
    DType dtype;
    Storage storage;
    Layout layout;
  };
  const Want want[] = {
      {"f32.buffer.nchw", DType::F32, Storage::Buffer, Layout::NCHW},
      {"f32.buffer.nc4hw4", DType::F32, Storage::Buffer, Layout::NC4HW4},
      {"f32.image2d.nc4hw4", DType::F32, Storage::Image2D, Layout::NC4HW4},
      {"f16.buffer.nchw", DType::F16, Storage::Buffer, Layout::NCHW},
      {"f16.buffer.nc4hw4", DType::F16, Storage::Buffer, Layout::NC4HW4},
      {"f16.image2d.nc4hw4", DType::F16, Storage::Image2D, Layout::NC4HW4},
  };
  for (const auto& w : want) {
    SCOPED_TRACE(w.name);
    StorageFormat f = StorageFormat::parse(w.name);
    EXPECT_EQ(f.dtype, w.dtype);
    EXPECT_EQ(f.storage, w.storage);
    EXPECT_EQ(f.layout, w.layout);
    EXPECT_EQ(f.name(), w.name);
    EXPECT_EQ(StorageFormat::parse(f.name()), f);
  }
  // all() lists exactly these six, each once.
  const auto all = StorageFormat::all();
  ASSERT_EQ(all.size(), 6u);
  std::set<std::string> names;
  for (const auto& f : all) names.insert(f.name());
  std::set<std::string> expected;
  for (const auto& w : want) expected.insert(w.name);
  EXPECT_EQ(names, expected);
}

TEST(StorageFormat, UnknownNameThrows) {
  for (const std::string bad : {"", "f64.buffer.nchw", "f32.buffer", "f32.texture.nchw",
                                "f32.buffer.nhwc", "f32.buffer.nchw.extra", "buffer"}) {
    SCOPED_TRACE("'" + bad + "'");
    std::string msg = sdspeed_test::errorMessage([&] { StorageFormat::parse(bad); });
    EXPECT_NE(msg.find("unknown storage format '" + bad + "'"), std::string::npos) << msg;
  }
}

// The weight format's 4th part: absent for f32 weights (the old text, unchanged), ".wf16"
// for f16; both parse, round trip, and compare unequal.
TEST(StorageFormat, WeightFormatPart) {
  for (const auto& f : StorageFormat::all()) {
    EXPECT_EQ(f.weights, DType::F32);
    EXPECT_EQ(f.name().find(".w"), std::string::npos) << f.name();
    const StorageFormat h = f.withWeights(DType::F16);
    EXPECT_EQ(h.name(), f.name() + ".wf16");
    EXPECT_EQ(StorageFormat::parse(h.name()), h);
    EXPECT_FALSE(h == f);
    EXPECT_EQ(h.params().name(), "f16.buffer.nchw");
    EXPECT_EQ(f.params().name(), "f32.buffer.nchw");
  }
  EXPECT_EQ(StorageFormat::parse("f16.buffer.nchw.wf32"), StorageFormat::parse("f16.buffer.nchw"));
  EXPECT_EQ(parseDTypeList("f32,f16,f32", "--weights"), (std::vector<DType>{DType::F32, DType::F16}));
  const std::string msg = sdspeed_test::errorMessage([] { parseDTypeList("f32,bf16", "--weights"); });
  EXPECT_EQ(msg.rfind("--weights: unknown weight format 'bf16'", 0), 0u) << msg;
}

// The arithmetic part: absent for f32 (old texts unchanged), ".af16" after any weight
// part; parts out of order, repeated or unknown are errors naming the part.
TEST(StorageFormat, ArithmeticPart) {
  for (const auto& f : StorageFormat::all()) {
    EXPECT_EQ(f.arithmetic, DType::F32);
    const StorageFormat a = f.withArithmetic(DType::F16);
    EXPECT_EQ(a.name(), f.name() + ".af16");
    EXPECT_EQ(StorageFormat::parse(a.name()), a);
    EXPECT_FALSE(a == f);
    const StorageFormat wa = a.withWeights(DType::F16);
    EXPECT_EQ(wa.name(), f.name() + ".wf16.af16");
    EXPECT_EQ(StorageFormat::parse(wa.name()), wa);
  }
  EXPECT_EQ(StorageFormat::parse("f32.buffer.nchw.af32"), StorageFormat{});
  for (const std::string bad : {"f32.buffer.nchw.af16.wf16", "f32.buffer.nchw.af16.af16", "f32.buffer.nchw.ax",
                                "f32.buffer.nchw.qf16", "f32.buffer.nchw.af8", "f32.buffer.nchw.aint8"}) {
    SCOPED_TRACE(bad);
    const std::string msg = sdspeed_test::errorMessage([&] { StorageFormat::parse(bad); });
    EXPECT_NE(msg.find("unknown storage format '" + bad + "'"), std::string::npos) << msg;
  }
}

// int8/int4 weights (q8_0/q4_0 blocks): ".wint8"/".wint4" keys; a quantized tensor's
// bytes are its rows (n) x whole blocks of its reduction (c*h*w), the round trip through
// pack/unpack is quantize + dequantize (what the check's reference sees), and under
// them a non-matrix parameter slot is f16.
TEST(StorageFormat, QuantizedWeightFormats) {
  const StorageFormat f{};
  for (DType q : {DType::Q8_0, DType::Q4_0}) {
    const StorageFormat w = f.withWeights(q);
    EXPECT_EQ(w.name(), std::string("f32.buffer.nchw.w") + (q == DType::Q8_0 ? "int8" : "int4"));
    EXPECT_EQ(StorageFormat::parse(w.name()), w);
    EXPECT_TRUE(isQuantized(q));
    const TensorDesc d{{3, 4, 3, 3}, w.params()};  // 36 = 4 x 3 x 3 per row: 2 blocks
    EXPECT_EQ(d.bytes(), 3u * 2 * (q == DType::Q8_0 ? 34 : 18));
    std::vector<float> v(108);
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i));
    const auto back = unpackTensor(d, packTensor(d, v));
    double err = 0;
    for (size_t i = 0; i < v.size(); ++i) err = std::max(err, std::fabs(static_cast<double>(back[i]) - v[i]));
    EXPECT_GT(err, 0.0);
    EXPECT_LT(err, q == DType::Q8_0 ? 1.0 / 127 : 1.0 / 8 + 1e-3);  // half a step (d <= 1/127, 1/8), int4's clamp: a step
    EXPECT_EQ(unpackTensor(d, packTensor(d, back)), back);  // dequantized values quantize to themselves
    TensorSlot matrix{"w", Access::Read, false, false, true}, bias{"bias", Access::Read, false};
    EXPECT_EQ(slotFormat(matrix, w).dtype, q);
    EXPECT_EQ(slotFormat(bias, w).dtype, DType::F16);
  }
  EXPECT_EQ(parseDTypeList("int8,int4,f16", "--weights"), (std::vector<DType>{DType::Q8_0, DType::Q4_0, DType::F16}));
  const std::string msg = sdspeed_test::errorMessage([] { StorageFormat::parse("f32.buffer.nchw.wint3"); });
  EXPECT_NE(msg.find("wint3"), std::string::npos) << msg;
}

TEST(StorageFormat, ImageWithNchwLayoutIsImpossible) {
  for (const std::string bad : {"f32.image2d.nchw", "f16.image2d.nchw"}) {
    SCOPED_TRACE(bad);
    std::string msg = sdspeed_test::errorMessage([&] { StorageFormat::parse(bad); });
    EXPECT_NE(msg.find(bad), std::string::npos) << msg;
    EXPECT_NE(msg.find("impossible"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nc4hw4"), std::string::npos) << msg;
  }
}

// ---------------------------------------------------------------- layout arithmetic

TEST(TensorDesc, NchwPhysicalIndex) {
  TensorDesc d{{2, 3, 4, 5}, StorageFormat::parse("f32.buffer.nchw")};
  EXPECT_EQ(d.physicalElements(), 120u);
  EXPECT_EQ(d.bytes(), 480u);
  EXPECT_EQ(d.physicalIndex(0, 0, 0), 0u);
  EXPECT_EQ(d.physicalIndex(0, 0, 19), 19u);
  EXPECT_EQ(d.physicalIndex(0, 1, 0), 20u);
  EXPECT_EQ(d.physicalIndex(1, 0, 0), 60u);
  EXPECT_EQ(d.physicalIndex(1, 2, 13), 113u);  // (1*3 + 2) * 20 + 13
  EXPECT_EQ(d.physicalIndex(1, 2, 19), 119u);
  TensorDesc h{{2, 3, 4, 5}, StorageFormat::parse("f16.buffer.nchw")};
  EXPECT_EQ(h.physicalElements(), 120u);
  EXPECT_EQ(h.bytes(), 240u);
  EXPECT_TRUE(paddingIndices(d).empty());
}

TEST(TensorDesc, Nc4hw4PhysicalIndexWithPartialSlice) {
  // C = 6: two slices, the second holds channels 4, 5 and two padding lanes.
  TensorDesc d{{2, 6, 3, 5}, StorageFormat::parse("f32.buffer.nc4hw4")};
  EXPECT_EQ(d.physicalElements(), 2u * 2 * 15 * 4);
  EXPECT_EQ(d.bytes(), 240u * 4);
  EXPECT_EQ(d.physicalIndex(0, 0, 0), 0u);
  EXPECT_EQ(d.physicalIndex(0, 1, 0), 1u);  // channels of one slice are adjacent
  EXPECT_EQ(d.physicalIndex(0, 3, 0), 3u);
  EXPECT_EQ(d.physicalIndex(0, 0, 1), 4u);  // next hw position: next texel
  EXPECT_EQ(d.physicalIndex(0, 4, 0), 60u);  // slice 1 starts after 15 texels
  EXPECT_EQ(d.physicalIndex(1, 0, 0), 120u);
  EXPECT_EQ(d.physicalIndex(1, 5, 7), 209u);  // ((1*2 + 1) * 15 + 7) * 4 + 1

  // Every logical element maps to a distinct physical index; exactly the rest are padding.
  std::set<size_t> used;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 6; ++c)
      for (int64_t hw = 0; hw < 15; ++hw) {
        size_t i = d.physicalIndex(n, c, hw);
        EXPECT_LT(i, d.physicalElements());
        EXPECT_TRUE(used.insert(i).second) << "index " << i << " used twice";
      }
  const auto pad = paddingIndices(d);
  EXPECT_EQ(pad.size(), 2u * 2 * 15);  // N * (8 - 6) * HW
  for (size_t i : pad) {
    EXPECT_EQ(used.count(i), 0u) << "padding index " << i << " holds a logical element";
    EXPECT_GE(i % 4, 2u) << "padding index " << i << " is not lane 2 or 3";
    used.insert(i);
  }
  EXPECT_EQ(used.size(), d.physicalElements());

  // Image extents: one texel per (n, slice, h, w).
  TensorDesc img{{2, 6, 3, 5}, StorageFormat::parse("f16.image2d.nc4hw4")};
  EXPECT_EQ(img.imageWidth(), 5u);
  EXPECT_EQ(img.imageHeight(), 2u * 2 * 3);
  EXPECT_EQ(img.bytes(), 240u * 2);

  // C a multiple of 4: no padding.
  TensorDesc full{{1, 8, 2, 2}, StorageFormat::parse("f32.buffer.nc4hw4")};
  EXPECT_EQ(full.physicalElements(), 32u);
  EXPECT_TRUE(paddingIndices(full).empty());
}

TEST(TensorDesc, UnsupportedReason) {
  DeviceInfo dev;
  dev.maxAllocBytes = 1000;
  dev.imageSupport = false;
  TensorDesc small{{1, 4, 4, 4}, StorageFormat::parse("f32.buffer.nchw")};  // 256 bytes
  EXPECT_EQ(small.unsupportedReason(dev), "");
  TensorDesc big{{1, 4, 8, 8}, StorageFormat::parse("f32.buffer.nchw")};  // 1024 bytes
  EXPECT_NE(big.unsupportedReason(dev).find("max allocation"), std::string::npos);
  TensorDesc img{{1, 4, 4, 4}, StorageFormat::parse("f32.image2d.nc4hw4")};
  EXPECT_NE(img.unsupportedReason(dev).find("device lacks image support"), std::string::npos);
  dev.imageSupport = true;
  dev.image2dMaxWidth = 4;
  dev.image2dMaxHeight = 4;
  EXPECT_EQ(img.unsupportedReason(dev), "");  // 4 x (1*1*4)
  TensorDesc tall{{1, 8, 4, 4}, StorageFormat::parse("f32.image2d.nc4hw4")};  // 4 x 8
  EXPECT_NE(tall.unsupportedReason(dev).find("exceeds"), std::string::npos);
}

// ---------------------------------------------------------------- packing

class PackTest : public ::testing::TestWithParam<StorageFormat> {};

TEST_P(PackTest, RoundTripsAndZeroesPadding) {
  SDSPEED_SEEDED_RNG(rng);
  const StorageFormat f = GetParam();
  for (const Shape& shape : {Shape{2, 7, 3, 5}, Shape{1, 4, 2, 3}, Shape{1, 1, 1, 9}}) {
    SCOPED_TRACE(shape.text());
    const TensorDesc d{shape, f};
    // Random signs and magnitudes log-uniform over 2^-18..2^8: many binades, some
    // below half's normal range (2^-14), none zero.
    std::uniform_real_distribution<float> expo(-18.0f, 8.0f);
    std::bernoulli_distribution neg(0.5);
    std::vector<float> x(static_cast<size_t>(shape.elements()));
    for (auto& v : x) v = (neg(rng) ? -1.0f : 1.0f) * std::exp2(expo(rng));
    x[0] = 1.0f + 1.0f / 2048;  // exactly halfway between two halves: rounds to even (1.0)
    const auto bytes = packTensor(d, x);
    ASSERT_EQ(bytes.size(), d.bytes());

    // Each logical element sits at its physical index in the expected encoding.
    for (int64_t n = 0; n < shape.n; ++n)
      for (int64_t c = 0; c < shape.c; ++c)
        for (int64_t hw = 0; hw < shape.hw(); ++hw) {
          const size_t li = static_cast<size_t>((n * shape.c + c) * shape.hw() + hw);
          const size_t pi = d.physicalIndex(n, c, hw);
          if (f.dtype == DType::F32) {
            float got;
            std::memcpy(&got, bytes.data() + 4 * pi, 4);
            ASSERT_EQ(got, x[li]) << "element " << li;
          } else {
            uint16_t got;
            std::memcpy(&got, bytes.data() + 2 * pi, 2);
            ASSERT_EQ(got, Eigen::numext::bit_cast<uint16_t>(Eigen::half(x[li]))) << "element " << li;
          }
        }

    const auto back = unpackTensor(d, bytes);
    ASSERT_EQ(back.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      if (f.dtype == DType::F32) {
        ASSERT_EQ(back[i], x[i]) << "element " << i;
      } else {
        ASSERT_EQ(back[i], halfRound(x[i])) << "element " << i;
        // Half rounding: relative 2^-11 for normals, absolute 2^-25 for subnormals.
        ASSERT_LE(std::fabs(back[i] - x[i]), std::max(std::fabs(x[i]) * 0x1p-11f, 0x1p-25f))
            << "element " << i;
      }
    }
    if (f.dtype == DType::F16) {
      EXPECT_EQ(back[0], 1.0f);  // ties to even, not away
    }

    // Padding lanes: zero bytes, and the count the layout implies.
    const auto pad = paddingIndices(d);
    const size_t expectedPad = f.layout == Layout::NC4HW4
                                   ? static_cast<size_t>(shape.n * (shape.slices() * 4 - shape.c) * shape.hw())
                                   : 0;
    EXPECT_EQ(pad.size(), expectedPad);
    EXPECT_EQ(d.physicalElements(), static_cast<size_t>(shape.elements()) + expectedPad);
    const size_t eb = d.elementBytes();
    for (size_t i : pad)
      for (size_t b = 0; b < eb; ++b) ASSERT_EQ(bytes[i * eb + b], 0) << "padding element " << i;
    const auto phys = physicalToFloats(d, bytes);
    size_t zeros = 0;
    for (float v : phys) zeros += v == 0.0f;
    EXPECT_EQ(zeros, expectedPad) << "non-padding elements are non-zero, so only padding reads 0";
  }
}

TEST_P(PackTest, RejectsWrongSizes) {
  const TensorDesc d{{1, 5, 2, 2}, GetParam()};
  std::string msg = sdspeed_test::errorMessage([&] { packTensor(d, std::vector<float>(19, 1.0f)); });
  EXPECT_NE(msg.find("needs 20 values, got 19"), std::string::npos) << msg;
  std::vector<uint8_t> shortBytes(d.bytes() - 1);
  msg = sdspeed_test::errorMessage([&] { unpackTensor(d, shortBytes); });
  EXPECT_NE(msg.find("short"), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(AllFormats, PackTest, ::testing::ValuesIn(StorageFormat::all()),
                         [](const ::testing::TestParamInfo<StorageFormat>& info) {
                           std::string n = info.param.name();
                           for (char& c : n)
                             if (c == '.') c = '_';
                           return n;
                         });
