// The op instances a model runs, from its graphs (the source of truth for shapes):
// what `sdspeed shapes` lists and `sdspeed tune --model` sweeps, deduplicated per
// component with their count per component call, the most costly first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tuning/shape_set.h"

namespace sdspeed {

// width/height: the image; batch: the UNet's and text encoder's (2 with guidance;
// the VAE decoder runs at batch 1).
std::vector<ShapeEntry> modelShapes(const std::string& configDir, int64_t width, int64_t height, int64_t batch);

// configs/shapes/*.yaml text (tuning/shape_set.h reads it back); `header` becomes
// the leading comment.
std::string shapeSetYaml(const std::string& name, const std::vector<ShapeEntry>& entries, const std::string& header);

// The image size a config folder implies when -W/-H are not given
// (unet sample_size x the VAE's upscale factor) and the check that a size fits it.
int64_t defaultImageSize(const std::string& configDir);
// Throws Error unless width and height are positive multiples of the VAE factor
// times the UNet's downsampling (so every level has whole pixels).
void checkImageSize(const std::string& configDir, int64_t width, int64_t height);

}  // namespace sdspeed
