#include "pipeline/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "runtime/atomic_file.h"
#include "runtime/error.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swaps");

namespace sdspeed {

using nlohmann::json;

const char* dtypeName(StDType dtype) {
  switch (dtype) {
    case StDType::F32: return "F32";
    case StDType::F16: return "F16";
    case StDType::BF16: return "BF16";
    case StDType::I64: return "I64";
    case StDType::I32: return "I32";
    case StDType::U8: return "U8";
  }
  return "?";
}

size_t dtypeSize(StDType dtype) {
  switch (dtype) {
    case StDType::F32: return 4;
    case StDType::F16: return 2;
    case StDType::BF16: return 2;
    case StDType::I64: return 8;
    case StDType::I32: return 4;
    case StDType::U8: return 1;
  }
  return 0;
}

bool dtypeIsFloat(StDType dtype) {
  return dtype == StDType::F32 || dtype == StDType::F16 || dtype == StDType::BF16;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal half: mant * 2^-24, exactly representable as a normal float.
    int lz = std::countl_zero(static_cast<uint16_t>(mant)) - 6;  // leading zeros in the 10 bits
    mant = (mant << (lz + 1)) & 0x3ffu;                           // drop the leading one
    bits = sign | (static_cast<uint32_t>(112 - lz) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

float bf16ToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

namespace {

std::string where(const std::string& label) { return "safetensors '" + label + "': "; }
std::string where(const std::string& label, const std::string& tensor) {
  return where(label) + "tensor '" + tensor + "': ";
}

bool parseDType(const std::string& s, StDType& out) {
  static const std::pair<const char*, StDType> kNames[] = {
      {"F32", StDType::F32}, {"F16", StDType::F16}, {"BF16", StDType::BF16}, {"I64", StDType::I64}, {"I32", StDType::I32},
      {"U8", StDType::U8}};
  for (const auto& [name, dtype] : kNames) {
    if (s == name) {
      out = dtype;
      return true;
    }
  }
  return false;
}

size_t readOffset(const json& v, const std::string& label, const std::string& name) {
  if (!v.is_number_unsigned())
    throw Error(where(label, name) + "data_offsets must be two non-negative integers, got " + v.dump());
  return v.get<size_t>();
}

TensorInfo parseEntry(const std::string& name, const json& e, const std::string& label) {
  if (!e.is_object())
    throw Error(where(label, name) + "entry must be an object {dtype, shape, data_offsets}");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!e.contains(key)) throw Error(where(label, name) + "missing '" + key + "'");
  TensorInfo t;
  t.name = name;
  const json& dt = e["dtype"];
  if (!dt.is_string()) throw Error(where(label, name) + "dtype must be a string");
  if (!parseDType(dt.get<std::string>(), t.dtype))
    throw Error(where(label, name) + "unsupported dtype '" + dt.get<std::string>() +
                "' (supported: F32, F16, BF16, I64, I32, U8)");
  const json& shape = e["shape"];
  if (!shape.is_array()) throw Error(where(label, name) + "shape must be an array");
  size_t count = 1;
  bool overflow = false;
  for (const json& d : shape) {
    if (!d.is_number_unsigned())
      throw Error(where(label, name) + "shape entries must be non-negative integers, got " + shape.dump());
    size_t dim = d.get<size_t>();
    if (dim > static_cast<size_t>(INT64_MAX)) overflow = true;
    overflow |= __builtin_mul_overflow(count, dim, &count);
    t.shape.push_back(static_cast<int64_t>(dim));
  }
  size_t bytes = 0;
  overflow |= __builtin_mul_overflow(count, dtypeSize(t.dtype), &bytes);
  const json& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    throw Error(where(label, name) + "data_offsets must be [begin, end], got " + off.dump());
  t.begin = readOffset(off[0], label, name);
  t.end = readOffset(off[1], label, name);
  if (t.end < t.begin)
    throw Error(where(label, name) + "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                "] end before begin");
  if (overflow || bytes != t.end - t.begin)
    throw Error(where(label, name) + "shape " + shape.dump() + " x " + dtypeName(t.dtype) + " (" +
                std::to_string(dtypeSize(t.dtype)) + " bytes) = " + (overflow ? "overflow" : std::to_string(bytes)) +
                " bytes, but data_offsets span " + std::to_string(t.end - t.begin) + " bytes");
  return t;
}

}  // namespace

SafetensorsIndex parseSafetensors(std::span<const std::byte> file, const std::string& label) {
  if (file.size() < 8)
    throw Error(where(label) + "file is " + std::to_string(file.size()) +
                " bytes, too short for the 8-byte header length");
  uint64_t headerLen = 0;
  std::memcpy(&headerLen, file.data(), 8);
  if (headerLen > file.size() - 8)
    throw Error(where(label) + "header length " + std::to_string(headerLen) + " runs past the end of the file (" +
                std::to_string(file.size()) + " bytes)");
  const char* text = reinterpret_cast<const char*>(file.data() + 8);
  SafetensorsIndex index;
  index.dataStart = 8 + static_cast<size_t>(headerLen);
  const size_t dataSize = file.size() - index.dataStart;

  // nlohmann keeps the last of duplicate keys silently: catch them while parsing.
  std::vector<std::string> seen;
  auto onEvent = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key) {
      std::string key = parsed.get<std::string>();
      if (std::find(seen.begin(), seen.end(), key) != seen.end())
        throw Error(where(label, key) + "name appears twice in the header");
      seen.push_back(std::move(key));
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text, text + headerLen, onEvent);
  } catch (const json::exception& e) {
    throw Error(where(label) + "header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw Error(where(label) + "header must be a JSON object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (it->is_object())
        for (auto m = it->begin(); m != it->end(); ++m)
          if (m->is_string()) index.metadata[m.key()] = m->get<std::string>();
      continue;
    }
    index.tensors.push_back(parseEntry(it.key(), *it, label));
  }

  // The data section must be tiled exactly: in offset order each tensor starts where
  // the previous one ended (as the safetensors library requires), the last ends at
  // the end of the file.
  std::stable_sort(index.tensors.begin(), index.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  size_t expected = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo& t : index.tensors) {
    if (t.end > dataSize)
      throw Error(where(label, t.name) + "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                  "] run past the end of the data (" + std::to_string(dataSize) + " bytes after the header)");
    if (t.begin < expected)
      throw Error(where(label, t.name) + "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                  "] overlap tensor '" + prev->name + "' [" + std::to_string(prev->begin) + ", " +
                  std::to_string(prev->end) + "]");
    if (t.begin > expected)
      throw Error(where(label, t.name) + "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                  "] leave a gap of " + std::to_string(t.begin - expected) + " bytes after " +
                  (prev ? "tensor '" + prev->name + "'" : std::string("the header")));
    expected = t.end;
    prev = &t;
  }
  if (expected != dataSize)
    throw Error(where(label) + std::to_string(dataSize - expected) +
                " bytes after the last tensor's data are not described by the header (truncated header or "
                "extra data)");
  return index;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(where(path) + "cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(where(path) + "not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw Error(where(path) + "cannot mmap " + std::to_string(size_) + " bytes: " + std::strerror(err));
    }
    map_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping stays valid
  try {
    index_ = parseSafetensors({map_, size_}, path);
  } catch (...) {
    if (map_) ::munmap(const_cast<std::byte*>(map_), size_);
    map_ = nullptr;
    throw;
  }
  for (size_t i = 0; i < index_.tensors.size(); ++i) byName_.emplace(index_.tensors[i].name, i);
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<std::byte*>(map_), size_);
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept
    : path_(std::move(o.path_)), map_(o.map_), size_(o.size_), index_(std::move(o.index_)),
      byName_(std::move(o.byName_)) {
  o.map_ = nullptr;
  o.size_ = 0;
}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(const_cast<std::byte*>(map_), size_);
    path_ = std::move(o.path_);
    map_ = o.map_;
    size_ = o.size_;
    index_ = std::move(o.index_);
    byName_ = std::move(o.byName_);
    o.map_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

bool SafetensorsFile::contains(std::string_view name) const { return byName_.find(name) != byName_.end(); }

const TensorInfo& SafetensorsFile::info(std::string_view name) const {
  auto it = byName_.find(name);
  if (it == byName_.end()) throw Error(where(path_, std::string(name)) + "no such tensor in the file");
  return index_.tensors[it->second];
}

std::span<const std::byte> SafetensorsFile::bytes(std::string_view name) const {
  const TensorInfo& t = info(name);
  return {map_ + index_.dataStart + t.begin, t.bytes()};
}

namespace {
template <typename T>
T load(const std::byte* p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));  // the data need not be aligned
  return v;
}
}  // namespace

std::vector<float> SafetensorsFile::toFloat(std::string_view name) const {
  const TensorInfo& t = info(name);
  const std::byte* p = bytes(name).data();
  size_t n = t.bytes() / dtypeSize(t.dtype);
  std::vector<float> out(n);
  switch (t.dtype) {
    case StDType::F32:
      if (n) std::memcpy(out.data(), p, n * 4);
      break;
    case StDType::F16:
      for (size_t i = 0; i < n; ++i) out[i] = halfToFloat(load<uint16_t>(p, i));
      break;
    case StDType::BF16:
      for (size_t i = 0; i < n; ++i) out[i] = bf16ToFloat(load<uint16_t>(p, i));
      break;
    case StDType::I64:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<int64_t>(p, i));
      break;
    case StDType::I32:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<int32_t>(p, i));
      break;
    case StDType::U8:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<uint8_t>(p, i));
      break;
  }
  return out;
}

std::vector<int64_t> SafetensorsFile::toInt64(std::string_view name) const {
  const TensorInfo& t = info(name);
  if (dtypeIsFloat(t.dtype))
    throw Error(where(path_, t.name) + "is " + dtypeName(t.dtype) + ", not an integer tensor (I64 or I32)");
  const std::byte* p = bytes(name).data();
  size_t n = t.bytes() / dtypeSize(t.dtype);
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = t.dtype == StDType::I64 ? load<int64_t>(p, i)
             : t.dtype == StDType::I32 ? load<int32_t>(p, i) : static_cast<int64_t>(load<uint8_t>(p, i));
  return out;
}

// ---- writer ----

void SafetensorsWriter::addEntry(Entry entry, size_t count) {
  const std::string w = "safetensors writer: tensor '" + entry.name + "': ";
  if (entry.name.empty() || entry.name == "__metadata__")
    throw Error("safetensors writer: invalid tensor name '" + entry.name + "'");
  for (const Entry& e : entries_)
    if (e.name == entry.name) throw Error(w + "added twice");
  size_t n = 1;
  for (int64_t d : entry.shape) {
    if (d < 0) throw Error(w + "negative dimension " + std::to_string(d));
    n *= static_cast<size_t>(d);
  }
  if (n != count)
    throw Error(w + "shape has " + std::to_string(n) + " elements but " + std::to_string(count) + " values given");
  entries_.push_back(std::move(entry));
}

void SafetensorsWriter::add(const std::string& name, const std::vector<int64_t>& shape, std::span<const float> data) {
  addEntry({name, StDType::F32, shape, std::string(reinterpret_cast<const char*>(data.data()), data.size_bytes())},
           data.size());
}

void SafetensorsWriter::add(const std::string& name, const std::vector<int64_t>& shape,
                            std::span<const int64_t> data) {
  addEntry({name, StDType::I64, shape, std::string(reinterpret_cast<const char*>(data.data()), data.size_bytes())},
           data.size());
}

void SafetensorsWriter::add(const std::string& name, const std::vector<int64_t>& shape, StDType dtype,
                            std::span<const uint16_t> bits) {
  if (dtype != StDType::F16 && dtype != StDType::BF16)
    throw Error("safetensors writer: tensor '" + name + "': 16-bit patterns must be F16 or BF16, not " +
                dtypeName(dtype));
  addEntry({name, dtype, shape, std::string(reinterpret_cast<const char*>(bits.data()), bits.size_bytes())},
           bits.size());
}

void SafetensorsWriter::add(const std::string& name, const std::vector<int64_t>& shape, std::span<const uint8_t> bytes) {
  addEntry({name, StDType::U8, shape, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())},
           bytes.size());
}

std::string SafetensorsWriter::serialize() const {
  // ordered_json keeps the tensors in the order they were added (as Python's writer does).
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  size_t offset = 0;
  for (const Entry& e : entries_) {
    header[e.name] = {{"dtype", dtypeName(e.dtype)},
                      {"shape", e.shape},
                      {"data_offsets", {offset, offset + e.bytes.size()}}};
    offset += e.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data 8-byte aligned, as the reference writer pads
  uint64_t len = text.size();
  std::string out(reinterpret_cast<const char*>(&len), 8);
  out += text;
  for (const Entry& e : entries_) out += e.bytes;
  return out;
}

void SafetensorsWriter::write(const std::string& path) const { writeFileAtomically(path, serialize()); }

}  // namespace sdspeed
