#include "pipeline/png.h"

#ifdef SDSPEED_HAVE_PNG
#include <png.h>
#endif

#include <cmath>

#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace sdspeed {

std::vector<uint8_t> toRgb8(const std::vector<float>& decoded, int height, int width, int batchIndex) {
  if (height <= 0 || width <= 0)
    throw Error("toRgb8: image size " + std::to_string(height) + "x" + std::to_string(width) + " is not positive");
  const size_t plane = static_cast<size_t>(height) * static_cast<size_t>(width);
  const size_t image = 3 * plane;
  if (decoded.empty() || decoded.size() % image != 0)
    throw Error("toRgb8: " + std::to_string(decoded.size()) + " values are not a whole number of [3, " +
                std::to_string(height) + ", " + std::to_string(width) + "] images");
  const size_t batch = decoded.size() / image;
  if (batchIndex < 0 || static_cast<size_t>(batchIndex) >= batch)
    throw Error("toRgb8: image " + std::to_string(batchIndex) + " asked for, the batch has " + std::to_string(batch));
  const float* src = decoded.data() + static_cast<size_t>(batchIndex) * image;
  std::vector<uint8_t> rgb(image);
  for (size_t c = 0; c < 3; ++c) {
    for (size_t p = 0; p < plane; ++p) {
      // Each operation rounded to float32, as torch does (this file: -ffp-contract=off).
      float v = src[c * plane + p] / 2.0f + 0.5f;
      v = v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
      const float scaled = v * 255.0f;
      // nearbyint in the default rounding mode: half to even, as numpy's round.
      rgb[p * 3 + c] = std::isnan(scaled) ? 0 : static_cast<uint8_t>(std::nearbyint(scaled));
    }
  }
  return rgb;
}

bool havePng() {
#ifdef SDSPEED_HAVE_PNG
  return true;
#else
  return false;
#endif
}

void writePng(const std::string& path, const std::vector<uint8_t>& rgb, int height, int width) {
#ifndef SDSPEED_HAVE_PNG
  (void)rgb, (void)height, (void)width;
  throw Error(path + ": this sdspeed was built without libpng (libpng-dev): no PNG output");
#else
  const std::string where = "writePng '" + path + "': ";
  if (height <= 0 || width <= 0)
    throw Error(where + "image size " + std::to_string(height) + "x" + std::to_string(width) + " is not positive");
  if (rgb.size() != static_cast<size_t>(height) * static_cast<size_t>(width) * 3)
    throw Error(where + std::to_string(rgb.size()) + " bytes given, a " + std::to_string(height) + "x" +
                std::to_string(width) + " RGB image has " + std::to_string(size_t(height) * width * 3));
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = static_cast<png_uint_32>(width);
  img.height = static_cast<png_uint_32>(height);
  img.format = PNG_FORMAT_RGB;
  // The simplified API reports errors through its return value (no setjmp); first call sizes the buffer.
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&img, nullptr, &size, 0, rgb.data(), 0, nullptr))
    throw Error(where + "libpng: " + img.message);
  std::string bytes(size, '\0');
  if (!png_image_write_to_memory(&img, bytes.data(), &size, 0, rgb.data(), 0, nullptr))
    throw Error(where + "libpng: " + img.message);
  bytes.resize(size);
  try {
    writeFileAtomically(path, bytes);
  } catch (const Error& e) {
    throw Error(where + e.what());
  }
#endif
}

}  // namespace sdspeed
