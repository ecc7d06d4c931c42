// Host-side packing between logical NCHW floats and the physical bytes of a tensor
// descriptor: what every backend's device tensor uploads and reads back. No GPU API.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/tensor_desc.h"

namespace sdspeed {

// f16 rounds to nearest even; padding lanes are zero; int8/int4 are quantized into
// blocks along each output channel's reduction (kernels/QUANTIZATION.md).
std::vector<uint8_t> packTensor(const TensorDesc& desc, const std::vector<float>& nchw);
std::vector<float> physicalToFloats(const TensorDesc& desc, const std::vector<uint8_t>& bytes);
std::vector<float> unpackTensor(const TensorDesc& desc, const std::vector<uint8_t>& bytes);
// Physical element indices that are layout padding (NC4HW4 lanes past C).
std::vector<size_t> paddingIndices(const TensorDesc& desc);
// The tensor's physical bytes with every element (padding too) NaN; quantized blocks get
// all-ones bytes, whose f16 scales are NaN.
void poisonBytes(const TensorDesc& desc, std::vector<uint8_t>& bytes);

}  // namespace sdspeed
