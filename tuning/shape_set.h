// Shape sets (configs/shapes/*.yaml): the op instances a model runs, each with its
// component (text_encoder, unet, vae_decoder) and how often it runs per call of that
// component, so a sweep can start with what matters most.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/tensor_desc.h"

namespace sdspeed {

struct ShapeEntry {
  std::string op;
  Shape shape;
  std::map<std::string, std::string> attrs;
  std::string component;
  int count = 1;
  // Of `count`, the runs that read only steady inputs (the UNet's text context: its K and
  // V projections), once per image rather than once per call of the component
  // (Graph::steadyNodes): what `tune --model` weighs them by. 0..count.
  int steady = 0;
  double weight() const { return static_cast<double>(count) * static_cast<double>(shape.elements()); }
};

// Throws Error naming the file, line and key of anything malformed.
std::vector<ShapeEntry> loadShapeSet(const std::string& path);

}  // namespace sdspeed
