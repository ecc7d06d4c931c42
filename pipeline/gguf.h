// GGUF files (ggml-org/ggml docs/gguf.md), as stable-diffusion.cpp writes them: a header
// ("GGUF", version 2 or 3, tensor and key-value counts), typed key-values (skipped except
// general.alignment), tensor infos (name, ggml dims innermost first, ggml type, offset),
// then the data at the alignment. GgufFile maps the file read-only and validates the whole
// header first; every problem is one sdspeed::Error naming the file (and the tensor).
// Tensor types read: F32, F16, Q8_0, Q4_0 (sdspeed's int8/int4 blocks,
// kernels/QUANTIZATION.md); others are an Error naming the type when loaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace sdspeed {

struct GgufTensor {
  std::string name;
  uint32_t type = 0;           // ggml_type: 0 F32, 1 F16, 2 Q4_0, 8 Q8_0
  std::vector<int64_t> shape;  // outermost first (numpy / PyTorch order: ggml's dims reversed)
  size_t offset = 0, bytes = 0;  // into the file
  std::string typeName() const;  // "F32", "F16", "Q4_0", "Q8_0", or "ggml type N"
};

// The whole parser, over a file's bytes (GgufFile maps the file; the fuzz target calls
// this directly): validated tensor infos, offsets from the file's start. Throws Error
// naming `label` (and the tensor).
std::vector<GgufTensor> parseGguf(std::span<const std::byte> file, const std::string& label);
// A tensor's values as float (F32, F16, Q8_0, Q4_0); Error naming `label` for other types.
std::vector<float> ggufTensorToFloat(std::span<const std::byte> file, const GgufTensor& t, const std::string& label);

class GgufFile {
 public:
  explicit GgufFile(const std::string& path);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find(const std::string& name) const;
  std::span<const std::byte> bytes(const GgufTensor& t) const { return {map_ + t.offset, t.bytes}; }
  // Values as float: F32 copied, F16 widened, Q8_0/Q4_0 dequantized (rows of the
  // innermost dimension, as ggml blocks them).
  std::vector<float> toFloat(const GgufTensor& t) const;

 private:
  std::string path_;
  const std::byte* map_ = nullptr;
  size_t size_ = 0;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> byName_;
};

}  // namespace sdspeed
