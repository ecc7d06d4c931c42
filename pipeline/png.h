// The pipeline's image output: the VAE's decoded tensor to 8-bit RGB, and PNG files
// (libpng's simplified API, written atomically through runtime/atomic_file.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sdspeed {

// decoded: the VAE output [N, 3, H, W] NCHW floats in [-1, 1]; returns image batchIndex
// as HWC RGB bytes with (x/2 + 0.5).clamp(0,1)*255 rounded half to even, in float32 as
// diffusers' postprocessing does it (the fixture's decoded_ddim.png). NaN becomes 0.
// Throws Error when decoded.size() is not a multiple of 3*H*W or batchIndex is out of range.
std::vector<uint8_t> toRgb8(const std::vector<float>& decoded, int height, int width, int batchIndex = 0);

// Writes an 8-bit RGB PNG atomically (temp file + rename); throws Error naming the path.
// False in a build without libpng (writePng then throws).
bool havePng();
void writePng(const std::string& path, const std::vector<uint8_t>& rgb, int height, int width);

}  // namespace sdspeed
