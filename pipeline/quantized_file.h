// How `sdspeed quantize` stores int8/int4 weights in safetensors (kernels/QUANTIZATION.md):
// a quantized tensor is a U8 tensor [rows, bytes per row] holding ggml's q8_0 / q4_0
// blocks exactly as the device holds them (each row padded to whole blocks of 32, the
// scale inside each block), and the file's __metadata__ says so:
//   "sdspeed.quantized": "1"                       (this layout's version)
//   "sdspeed.quant.<tensor>": "q8_0 320,4,3,3"     (block format, diffusers' shape)
// Every other tensor is an ordinary F16 / F32 one. Loading dequantizes (WeightSource::
// load), or the executor uploads the blocks as they are (WeightSource::mappedBytes with
// "Q8_0" / "Q4_0").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/safetensors.h"
#include "runtime/quant/quant.h"

namespace sdspeed {

inline constexpr const char* kQuantizedVersionKey = "sdspeed.quantized";
inline constexpr const char* kQuantizedVersion = "1";
inline constexpr const char* kQuantizedTensorPrefix = "sdspeed.quant.";

struct QuantizedTensor {
  quant::Format format;
  std::vector<int64_t> shape;  // diffusers' shape; rows = shape[0], reduction = the rest
  quant::MatrixLayout layout() const;
};

// The metadata value for a tensor: "q8_0 320,4,3,3".
std::string quantizedTensorMeta(quant::Format f, const std::vector<int64_t>& shape);
// The tensor's quantization when the file's metadata names it (nullopt for a plain
// tensor). Throws Error naming the file and tensor for a version this build does not
// read, a malformed entry, a tensor that is not U8, or a byte count that does not match.
std::optional<QuantizedTensor> quantizedTensor(const SafetensorsFile& file, const TensorInfo& t);

}  // namespace sdspeed
