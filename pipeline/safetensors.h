// safetensors files (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON header {name: {dtype, shape,
// data_offsets: [begin, end]}, "__metadata__": {...}}, then the data, offsets
// relative to the byte after the header.
//
// SafetensorsFile memory-maps a file (POSIX mmap, read-only) and validates the whole
// header before anything is read: every problem (header length past the end of the
// file, malformed JSON, unknown dtype, shape x dtype size != byte length, offsets
// overlapping, leaving a gap or running past the end, duplicate names) is one
// sdspeed::Error naming the file and the tensor. SafetensorsWriter writes F32 / I64
// (and F16 / BF16 bit patterns) tensors atomically (runtime/atomic_file.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sdspeed {

// U8: raw bytes (sdspeed's quantized weight blocks, kernels/QUANTIZATION.md).
enum class StDType { F32, F16, BF16, I64, I32, U8 };

// "F32", ... (the safetensors spelling).
const char* dtypeName(StDType dtype);
size_t dtypeSize(StDType dtype);
bool dtypeIsFloat(StDType dtype);

struct TensorInfo {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  size_t begin = 0;  // byte offsets into the data section
  size_t end = 0;
  int64_t numel() const;
  size_t bytes() const { return end - begin; }
};

// The validated index of a safetensors file held in memory (file = all its bytes).
// `label` names the file in error messages. Tensors are in data-offset order.
// This is the whole parser; SafetensorsFile adds the mapping (and the fuzz target
// calls it directly).
struct SafetensorsIndex {
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;  // __metadata__'s string values
  size_t dataStart = 0;                         // 8 + header length
};
SafetensorsIndex parseSafetensors(std::span<const std::byte> file, const std::string& label);

class SafetensorsFile {
 public:
  // Maps and validates `path`; throws Error on any problem.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return index_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return index_.metadata; }
  bool contains(std::string_view name) const;
  // Throws Error naming the file and the tensor when there is no such tensor.
  const TensorInfo& info(std::string_view name) const;
  // The tensor's raw little-endian bytes inside the mapping (valid while this lives).
  std::span<const std::byte> bytes(std::string_view name) const;

  // The tensor's values as float: F32 copied, F16/BF16 widened exactly, I32/I64
  // converted (rounded where |v| > 2^24).
  std::vector<float> toFloat(std::string_view name) const;
  // The tensor's values as int64: I32/I64 only (a float tensor is an Error).
  std::vector<int64_t> toInt64(std::string_view name) const;

 private:
  std::string path_;
  const std::byte* map_ = nullptr;
  size_t size_ = 0;
  SafetensorsIndex index_;
  std::map<std::string, size_t, std::less<>> byName_;
};

// Collects F32 / I64 / F16 / BF16 tensors and writes them as one safetensors file, atomically
// (temporary file + rename). Tensors are written in the order they were added.
class SafetensorsWriter {
 public:
  // Throws Error for a duplicate or empty name, "__metadata__", a negative dimension,
  // or data whose size is not the shape's element count.
  void add(const std::string& name, const std::vector<int64_t>& shape, std::span<const float> data);
  void add(const std::string& name, const std::vector<int64_t>& shape, std::span<const int64_t> data);
  // F16 / BF16 tensors given as their 16-bit patterns (dtype must be one of those two).
  void add(const std::string& name, const std::vector<int64_t>& shape, StDType dtype, std::span<const uint16_t> bits);
  // U8 bytes (quantized weight blocks).
  void add(const std::string& name, const std::vector<int64_t>& shape, std::span<const uint8_t> bytes);
  void setMetadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  // The whole file's bytes.
  std::string serialize() const;
  void write(const std::string& path) const;

 private:
  struct Entry {
    std::string name;
    StDType dtype;
    std::vector<int64_t> shape;
    std::string bytes;
  };
  void addEntry(Entry entry, size_t count);
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

// IEEE half / bfloat16 bit patterns -> float (exact; NaN and infinities kept).
float halfToFloat(uint16_t bits);
float bf16ToFloat(uint16_t bits);

}  // namespace sdspeed
