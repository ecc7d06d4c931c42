// Ground truth for the activations, computed in double.
#pragma once

#include <string>
#include <vector>

#include "runtime/tensor_desc.h"

namespace sdspeed {

// fn: gelu (erf), gelu_tanh, quick_gelu (x sigmoid(1.702 x)), silu, geglu (input
// channels [0, F) times gelu of channels [F, 2F); output C/2 channels). NCHW arrays.
// Throws Error for another fn or an odd channel count with geglu.
std::vector<double> activationReference(const Shape& in, const std::string& fn, const std::vector<float>& x);

}  // namespace sdspeed
