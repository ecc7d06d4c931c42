// pipeline/png.*: the VAE output to bytes exactly as the fixture's decoded_ddim.png
// (read back with libpng), rounding half to even, and PNG files that read back.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <limits>

#include "pipeline/png.h"
#include "pipeline/safetensors.h"
#include "test_support.h"

using namespace sdspeed;
using sdspeed_test::errorMessage;
using sdspeed_test::TempDir;

namespace {

const std::string kTiny = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";

// A PNG file's pixels as 8-bit RGB, through libpng's simplified API.
std::vector<uint8_t> readPng(const std::string& path, int& height, int& width) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path.c_str())) {
    ADD_FAILURE() << path << ": " << img.message;
    return {};
  }
  img.format = PNG_FORMAT_RGB;
  std::vector<uint8_t> out(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, out.data(), 0, nullptr)) ADD_FAILURE() << path << ": " << img.message;
  height = static_cast<int>(img.height);
  width = static_cast<int>(img.width);
  return out;
}

}  // namespace

TEST(Png, DecodedDdimMatchesTheFixturePng) {
  SafetensorsFile ref(kTiny + "/reference.safetensors");
  ASSERT_EQ(ref.info("decoded_ddim").shape, (std::vector<int64_t>{1, 3, 32, 32}));
  std::vector<uint8_t> rgb = toRgb8(ref.toFloat("decoded_ddim"), 32, 32);
  int h = 0, w = 0;
  std::vector<uint8_t> png = readPng(kTiny + "/decoded_ddim.png", h, w);
  EXPECT_EQ(h, 32);
  EXPECT_EQ(w, 32);
  ASSERT_EQ(rgb.size(), png.size());
  size_t differing = 0;
  for (size_t i = 0; i < rgb.size(); ++i) differing += rgb[i] != png[i];
  EXPECT_EQ(differing, 0u);
}

TEST(Png, LayoutClampAndRounding) {
  // [2, 3, 1, 2]: batch 1's channels are distinguishable per pixel.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {0, 0, 0, 0, 0, 0,  // batch 0
                          -1, 1, -5, 5, 0, nan};
  EXPECT_EQ(toRgb8(x, 1, 2, 1), (std::vector<uint8_t>{0, 0, 128, 255, 255, 0}));  // HWC
  EXPECT_EQ(toRgb8(x, 1, 2, 0), std::vector<uint8_t>(6, 128));  // 127.5 -> 128

  // A value whose float32 scaled pixel is exactly 128.5 must give 128 (half to even),
  // not 129 (half up): search the floats near it.
  float found = nan;
  for (float v = 128.4f / 255.0f; v < 128.6f / 255.0f; v = std::nextafter(v, 1.0f)) {
    float x0 = (v - 0.5f) * 2.0f;
    if (x0 / 2.0f + 0.5f == v && v * 255.0f == 128.5f) {
      found = x0;
      break;
    }
  }
  ASSERT_FALSE(std::isnan(found));
  EXPECT_EQ(toRgb8({found, found, found}, 1, 1)[0], 128);

  EXPECT_NE(errorMessage([&] { toRgb8(x, 3, 2); }).find("not a whole number"), std::string::npos);
  EXPECT_NE(errorMessage([&] { toRgb8(x, 1, 2, 2); }).find("the batch has 2"), std::string::npos);
}

TEST(Png, WriteReadRoundTrip) {
  TempDir dir;
  const int h = 5, w = 7;
  std::vector<uint8_t> rgb(h * w * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 37 + 11);
  const std::string path = dir.path() + "/sub/out.png";  // the parent is created
  writePng(path, rgb, h, w);
  int rh = 0, rw = 0;
  EXPECT_EQ(readPng(path, rh, rw), rgb);
  EXPECT_EQ(rh, h);
  EXPECT_EQ(rw, w);

  std::string msg = errorMessage([&] { writePng(path, rgb, h, w + 1); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  // A path under a regular file cannot be written.
  const std::string bad = path + "/x.png";
  msg = errorMessage([&] { writePng(bad, rgb, h, w); });
  EXPECT_NE(msg.find(bad), std::string::npos) << msg;
}
