#include "pipeline/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "pipeline/safetensors.h"  // halfToFloat
#include "runtime/error.h"
#include "runtime/quant/quant.h"

namespace sdspeed {
namespace {

constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8;

// A bounds-checked little-endian reader over the mapped header.
class Reader {
 public:
  Reader(const std::byte* p, size_t n, std::string label) : p_(p), n_(n), label_(std::move(label)) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string str() {
    const uint64_t len = get<uint64_t>();
    need(len);
    std::string s(reinterpret_cast<const char*>(p_ + at_), len);
    at_ += len;
    return s;
  }
  void skip(uint64_t bytes) {
    need(bytes);
    at_ += bytes;
  }
  size_t at() const { return at_; }

 private:
  void need(uint64_t k) const {
    if (k > n_ - at_) throw Error("gguf '" + label_ + "': header runs past the end of the file (at byte " + std::to_string(at_) + ")");
  }
  const std::byte* p_;
  size_t n_, at_ = 0;
  std::string label_;
};

// Skips one value of GGUF type `type` (arrays recursively); returns it when it is a u32.
void skipValue(Reader& r, uint32_t type, const std::string& label, int depth = 0) {
  static const uint64_t kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};  // by gguf_type
  if (type == 8) {
    r.str();
  } else if (type == 9) {
    if (depth > 2) throw Error("gguf '" + label + "': arrays nested too deep");
    const uint32_t inner = r.get<uint32_t>();
    const uint64_t n = r.get<uint64_t>();
    if (inner != 8 && inner != 9 && inner < 13) {
      if (n > (uint64_t{1} << 40)) throw Error("gguf '" + label + "': array of " + std::to_string(n) + " values");
      r.skip(n * kSizes[inner]);
    } else {
      for (uint64_t i = 0; i < n; ++i) skipValue(r, inner, label, depth + 1);
    }
  } else if (type < 13) {
    r.skip(kSizes[type]);
  } else {
    throw Error("gguf '" + label + "': unknown value type " + std::to_string(type));
  }
}

size_t typeBytes(uint32_t type, int64_t elements, int64_t inner, const std::string& where) {
  switch (type) {
    case kF32: return static_cast<size_t>(elements) * 4;
    case kF16: return static_cast<size_t>(elements) * 2;
    case kQ8_0:
    case kQ4_0:
      if (inner % quant::kBlock)
        throw Error(where + "innermost dimension " + std::to_string(inner) + " is not a multiple of 32 for a block type");
      return static_cast<size_t>(elements / quant::kBlock) *
             quant::blockBytes(type == kQ8_0 ? quant::Format::Q8_0 : quant::Format::Q4_0);
    default:
      throw Error(where + "ggml type " + std::to_string(type) + " is not read (F32, F16, Q8_0, Q4_0)");
  }
}

}  // namespace

std::string GgufTensor::typeName() const {
  switch (type) {
    case kF32: return "F32";
    case kF16: return "F16";
    case kQ4_0: return "Q4_0";
    case kQ8_0: return "Q8_0";
  }
  return "ggml type " + std::to_string(type);
}

std::vector<GgufTensor> parseGguf(std::span<const std::byte> file, const std::string& path) {
  const size_t size_ = file.size();
  std::vector<GgufTensor> tensors;
  std::set<std::string> names;
  Reader r(file.data(), size_, path);
  if (size_ < 24 || std::memcmp(file.data(), "GGUF", 4) != 0) throw Error("gguf '" + path + "': not a GGUF file (no 'GGUF' magic)");
  r.skip(4);
  const uint32_t version = r.get<uint32_t>();
  if (version != 2 && version != 3)
    throw Error("gguf '" + path + "': version " + std::to_string(version) + " (this build reads 2 and 3)");
  const uint64_t nTensors = r.get<uint64_t>(), nKv = r.get<uint64_t>();
  if (nTensors > size_ || nKv > size_) throw Error("gguf '" + path + "': impossible tensor or key-value count");
  uint64_t alignment = 32;
  for (uint64_t i = 0; i < nKv; ++i) {
    const std::string key = r.str();
    const uint32_t type = r.get<uint32_t>();
    if (key == "general.alignment" && type == 4) {
      alignment = r.get<uint32_t>();
      if (alignment == 0 || (alignment & (alignment - 1)))
        throw Error("gguf '" + path + "': general.alignment " + std::to_string(alignment) + " is not a power of two");
    } else {
      skipValue(r, type, path);
    }
  }
  std::vector<std::pair<GgufTensor, uint64_t>> infos;
  for (uint64_t i = 0; i < nTensors; ++i) {
    GgufTensor t;
    t.name = r.str();
    const uint32_t nDims = r.get<uint32_t>();
    if (nDims == 0 || nDims > 4) throw Error("gguf '" + path + "': tensor '" + t.name + "': " + std::to_string(nDims) + " dimensions");
    std::vector<int64_t> ne(nDims);
    for (auto& d : ne) {
      const uint64_t v = r.get<uint64_t>();
      if (v == 0 || v > (uint64_t{1} << 40)) throw Error("gguf '" + path + "': tensor '" + t.name + "': dimension " + std::to_string(v));
      d = static_cast<int64_t>(v);
    }
    t.shape.assign(ne.rbegin(), ne.rend());
    t.type = r.get<uint32_t>();
    infos.emplace_back(std::move(t), r.get<uint64_t>());
  }
  const size_t dataStart = (r.at() + alignment - 1) / alignment * alignment;
  for (auto& [t, off] : infos) {
    const std::string where = "gguf '" + path + "': tensor '" + t.name + "': ";
    int64_t elements = 1;
    for (int64_t d : t.shape) {
      // No tensor holds more than 2 values per byte of the file (q4_0: 32 per 18 bytes).
      if (d > static_cast<int64_t>(2 * size_ + 2) / elements)
        throw Error(where + "more elements than the file can hold");
      elements *= d;
    }
    if (off % alignment) throw Error(where + "offset " + std::to_string(off) + " is not aligned");
    t.bytes = t.type == kF32 || t.type == kF16 || t.type == kQ8_0 || t.type == kQ4_0
                  ? typeBytes(t.type, elements, t.shape.back(), where)
                  : 0;  // other types: listed, refused when loaded
    if (off > size_ || dataStart > size_ - off || t.bytes > size_ - dataStart - off)
      throw Error(where + "data runs past the end of the file");
    t.offset = dataStart + off;
    if (!names.insert(t.name).second) throw Error(where + "appears twice");
    tensors.push_back(std::move(t));
  }
  return tensors;
}

GgufFile::GgufFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error("gguf '" + path + "': cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 24) {
    ::close(fd);
    throw Error("gguf '" + path + "': too short for a GGUF header");
  }
  size_ = static_cast<size_t>(st.st_size);
  void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) throw Error("gguf '" + path + "': cannot map: " + std::strerror(errno));
  map_ = static_cast<const std::byte*>(m);
  try {
    tensors_ = parseGguf({map_, size_}, path);
    for (size_t i = 0; i < tensors_.size(); ++i) byName_[tensors_[i].name] = i;
  } catch (...) {
    ::munmap(const_cast<std::byte*>(map_), size_);
    throw;
  }
}

GgufFile::~GgufFile() {
  if (map_) ::munmap(const_cast<std::byte*>(map_), size_);
}

const GgufTensor* GgufFile::find(const std::string& name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : &tensors_[it->second];
}

std::vector<float> ggufTensorToFloat(std::span<const std::byte> file, const GgufTensor& t, const std::string& path_) {
  if (t.offset > file.size() || t.bytes > file.size() - t.offset)
    throw Error("gguf '" + path_ + "': tensor '" + t.name + "': data runs past the end of the file");
  int64_t elements = 1;
  for (int64_t d : t.shape) elements *= d;
  std::vector<float> out(static_cast<size_t>(elements));
  const std::byte* p = file.data() + t.offset;
  switch (t.type) {
    case kF32:
      std::memcpy(out.data(), p, out.size() * 4);
      break;
    case kF16:
      for (size_t i = 0; i < out.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = halfToFloat(h);
      }
      break;
    case kQ8_0:
    case kQ4_0:
      quant::dequantizeBlocks(t.type == kQ8_0 ? quant::Format::Q8_0 : quant::Format::Q4_0,
                              reinterpret_cast<const uint8_t*>(p), elements, out.data());
      break;
    default:
      throw Error("gguf '" + path_ + "': tensor '" + t.name + "': " + t.typeName() + " is not read (F32, F16, Q8_0, Q4_0)");
  }
  return out;
}

std::vector<float> GgufFile::toFloat(const GgufTensor& t) const { return ggufTensorToFloat({map_, size_}, t, path_); }

}  // namespace sdspeed
