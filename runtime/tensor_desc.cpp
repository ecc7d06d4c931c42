#include "runtime/tensor_desc.h"

#include <algorithm>
#include <charconv>

#include "runtime/error.h"
#include "runtime/quant/quant.h"

namespace sdspeed {

std::string Shape::text() const {
  return std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" +
         std::to_string(w);
}

Shape parseShape(const std::string& text) {
  int64_t v[4];
  const char* p = text.data();
  const char* end = p + text.size();
  for (int i = 0; i < 4; ++i) {
    auto r = std::from_chars(p, end, v[i]);
    if (r.ec != std::errc() || v[i] <= 0) throw Error("bad shape '" + text + "' (want NxCxHxW)");
    p = r.ptr;
    if (i < 3) {
      if (p == end || *p != 'x') throw Error("bad shape '" + text + "' (want NxCxHxW)");
      ++p;
    }
  }
  if (p != end) throw Error("bad shape '" + text + "' (want NxCxHxW)");
  return {v[0], v[1], v[2], v[3]};
}

const char* dtypeName(DType d) {
  switch (d) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::Q8_0: return "int8";
    case DType::Q4_0: return "int4";
  }
  return "?";
}

DType parseDType(const std::string& text, const std::string& what) {
  for (DType d : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0})
    if (text == dtypeName(d)) return d;
  throw Error(what + ": unknown weight format '" + text + "' (want f32, f16, int8 or int4)");
}

std::vector<DType> parseDTypeList(const std::string& text, const std::string& what) {
  std::vector<DType> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const DType d = parseDType(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start), what);
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string StorageFormat::name() const {
  std::string s = dtypeName(dtype);
  s += storage == Storage::Buffer ? ".buffer" : ".image2d";
  s += layout == Layout::NCHW ? ".nchw" : ".nc4hw4";
  // f32 weights add nothing: the pre-weight-axis text, so old keys stay valid.
  if (weights != DType::F32) s += std::string(".w") + dtypeName(weights);
  if (arithmetic != DType::F32) s += std::string(".a") + dtypeName(arithmetic);
  return s;
}

StorageFormat StorageFormat::parse(const std::string& text) {
  // DTYPE.STORAGE.LAYOUT, then optional parts: "w" + the weight format, "a" + the
  // arithmetic, each at most once, in that order (the order name() writes).
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t dot = text.find('.', at);
    parts.push_back(text.substr(at, dot - at));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  DType weights = DType::F32, arithmetic = DType::F32;
  const char* want = " (want dtype.storage.layout[.wDTYPE][.aDTYPE], e.g. f32.buffer.nchw, f16.image2d.nc4hw4, "
                     "f32.buffer.nchw.wf16, f16.buffer.nchw.af16)";
  char last = 0;
  for (size_t i = 3; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    const char tag = p.empty() ? 0 : p[0];
    if ((tag != 'w' && tag != 'a') || (tag == 'w' && last != 0) || (tag == 'a' && last == 'a'))
      throw Error("unknown storage format '" + text + "': unexpected part '" + p + "'" + want);
    // Weights: f32, f16 and the block-quantized int8 (q8_0) and int4 (q4_0); arithmetic:
    // f32 and f16 (kernels/QUANTIZATION.md: quantized weights are dequantized into the
    // arithmetic, never computed on as integers by these kernels).
    bool known = false;
    for (DType d : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0})
      if ((tag == 'w' || d == DType::F32 || d == DType::F16) && p == std::string(1, tag) + dtypeName(d)) {
        (tag == 'w' ? weights : arithmetic) = d;
        known = true;
      }
    if (!known)
      throw Error("unknown storage format '" + text + "': unknown " + (tag == 'w' ? "weight format" : "arithmetic") +
                  " '" + p + "' (want " + (tag == 'w' ? ".wf16, .wint8, .wint4" : ".af16") + ", or no such part for f32)");
    last = tag;
  }
  const std::string base = parts.size() >= 3 ? parts[0] + "." + parts[1] + "." + parts[2] : text;
  for (const auto& f : all())
    if (f.name() == base) return f.withWeights(weights).withArithmetic(arithmetic);
  if (base.find("image2d.nchw") != std::string::npos)
    throw Error("storage format '" + text + "' is impossible: image2d storage is always nc4hw4");
  throw Error("unknown storage format '" + text + "'" + want);
}

std::vector<StorageFormat> StorageFormat::all() {
  std::vector<StorageFormat> out;
  for (DType d : {DType::F32, DType::F16}) {
    out.push_back({d, Storage::Buffer, Layout::NCHW});
    out.push_back({d, Storage::Buffer, Layout::NC4HW4});
    out.push_back({d, Storage::Image2D, Layout::NC4HW4});
  }
  return out;
}

size_t TensorDesc::physicalElements() const {
  if (isQuantized(format.dtype))
    return quant::MatrixLayout{format.dtype == DType::Q8_0 ? quant::Format::Q8_0 : quant::Format::Q4_0, shape.n,
                               shape.c * shape.hw()}
        .bytes();
  if (format.layout == Layout::NCHW) return static_cast<size_t>(shape.elements());
  return static_cast<size_t>(shape.n * shape.slices() * shape.hw() * 4);
}

size_t TensorDesc::physicalIndex(int64_t n, int64_t c, int64_t hw) const {
  if (format.layout == Layout::NCHW) return static_cast<size_t>((n * shape.c + c) * shape.hw() + hw);
  return static_cast<size_t>(((n * shape.slices() + c / 4) * shape.hw() + hw) * 4 + c % 4);
}

std::string TensorDesc::unsupportedReason(const DeviceCaps& dev) const {
  // Kernels take C, H*W and W as int and index one sample with int arithmetic.
  if (physicalElements() / static_cast<size_t>(shape.n) > 0x7fffffffu)
    return "tensor " + shape.text() + " has over 2^31 elements per sample (kernels index with 32-bit ints)";
  if (isQuantized(format.dtype) && (format.storage != Storage::Buffer || format.layout != Layout::NCHW))
    return std::string(dtypeName(format.dtype)) + " weights are NCHW buffers only";
  if (format.dtype == DType::F16 && !dev.storage16)
    return "device lacks 16-bit storage (Vulkan storageBuffer16BitAccess)";
  if (format.storage == Storage::Buffer) {
    if (bytes() > dev.maxAllocBytes)
      return "tensor " + shape.text() + " needs " + std::to_string(bytes()) +
             " bytes, over the device's max allocation of " + std::to_string(dev.maxAllocBytes);
    return {};
  }
  if (!dev.imageSupport) return "device lacks image support (CL_DEVICE_IMAGE_SUPPORT)";
  if (imageWidth() > dev.image2dMaxWidth || imageHeight() > dev.image2dMaxHeight)
    return "image2d " + std::to_string(imageWidth()) + "x" + std::to_string(imageHeight()) +
           " exceeds the device limit " + std::to_string(dev.image2dMaxWidth) + "x" +
           std::to_string(dev.image2dMaxHeight);
  return {};
}

std::string TensorDesc::text() const { return shape.text() + " " + format.name(); }

}  // namespace sdspeed
