// Tensor virtualization (ML Drift): a logical tensor is always NCHW (token tensors
// [B, S, C] are N=B, C, H=1, W=S), kept apart from how it is stored on the device.
// A StorageFormat (dtype x storage x layout) is a property of the whole run, chosen
// per device and recorded with every measurement; kernels reach their tensors only
// through accessor macros generated from the descriptor (tensor_access.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device_caps.h"

namespace sdspeed {

// F16 is storage only: kernels compute in float. Q8_0 and Q4_0 (`int8`, `int4`) are
// weight formats only, ggml's blocks of 32 (runtime/quant/quant.h, kernels/QUANTIZATION.md):
// a tensor in them is rows n, each a reduction of c*h*w values padded to whole blocks.
enum class DType { F32, F16, Q8_0, Q4_0 };
inline bool isQuantized(DType d) { return d == DType::Q8_0 || d == DType::Q4_0; }
enum class Storage { Buffer, Image2D };
enum class Layout { NCHW, NC4HW4 };     // NC4HW4 = [N][ceil(C/4)][H][W][4], pad lanes zero

struct Shape {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t hw() const { return h * w; }
  int64_t elements() const { return n * c * h * w; }
  int64_t slices() const { return (c + 3) / 4; }
  std::string text() const;  // "2x320x64x64"
  bool operator==(const Shape&) const = default;
};

// Parses "2x320x64x64" (N x C x H x W); throws Error on anything else.
Shape parseShape(const std::string& text);

// `weights` is the precision of the op's parameter slots (weights, biases, norm affine,
// embedding tables): they are always NCHW buffers, held in that dtype. Host inputs in
// non-activation slots (token ids, timesteps, masks) stay f32 whatever it is (ids up to
// 49407 are not exact in f16); see paramSlotFormat (kernels/family.h).
struct StorageFormat {
  DType dtype = DType::F32;
  Storage storage = Storage::Buffer;
  Layout layout = Layout::NCHW;
  DType weights = DType::F32;
  // What kernels compute in (the precision model's third axis, independent of what
  // activations and weights are stored in). f32 on every OpenCL kernel today; f16 is
  // declared per variant (VariantDef::arithmetic) where a kernel computes in half.
  DType arithmetic = DType::F32;

  // "DTYPE.STORAGE.LAYOUT" for f32 weights and f32 arithmetic ("f32.buffer.nchw",
  // "f16.image2d.nc4hw4"): the text every database, sweep CSV and op instance written
  // before those axes used, so their keys stay. Other weight formats add a part "w" +
  // dtype, f16 arithmetic a part "a" + dtype, in that order: "f32.buffer.nchw.wf16",
  // "f16.buffer.nchw.wf16.af16" (configs/tuned/FORMAT.md).
  std::string name() const;
  bool operator==(const StorageFormat&) const = default;
  // Throws Error for unknown text or an impossible combination (an image is RGBA
  // texels, so it is always NC4HW4). Accepts the 3-part form and the optional parts.
  static StorageFormat parse(const std::string& text);
  // Every valid activation combination, f32 weights, in a stable order.
  static std::vector<StorageFormat> all();
  // The format of the parameter slots: {weights, Buffer, NCHW}.
  StorageFormat params() const { return {weights, Storage::Buffer, Layout::NCHW}; }
  // This format with weights in `w`.
  StorageFormat withWeights(DType w) const {
    StorageFormat f = *this;
    f.weights = w;
    return f;
  }
  // This format computing in `a`.
  StorageFormat withArithmetic(DType a) const {
    StorageFormat f = *this;
    f.arithmetic = a;
    return f;
  }
  // Bytes per element of the unquantized parameter slots: quantized formats hold those
  // (biases, norm affine, tables, and every weight of a family with no quantized path) in f16.
  size_t weightElementBytes() const { return weights == DType::F32 ? 4 : 2; }
};

const char* dtypeName(DType d);  // "f32", "f16", "int8", "int4"
// "f32", "f16", "int8" or "int4"; throws Error naming `what` (e.g. "--weights") for anything else.
DType parseDType(const std::string& text, const std::string& what);
// "f32,f16" -> {F32, F16} (no duplicates); throws Error naming `what` on a bad item.
std::vector<DType> parseDTypeList(const std::string& text, const std::string& what);

struct TensorDesc {
  Shape shape;
  StorageFormat format;

  // A quantized tensor is addressed in bytes (its offsets and X_OFF count bytes).
  size_t elementBytes() const {
    return format.dtype == DType::F32 ? 4 : format.dtype == DType::F16 ? 2 : 1;
  }
  // Elements the storage holds, padding lanes included (quantized: the packed bytes).
  size_t physicalElements() const;
  size_t bytes() const { return physicalElements() * elementBytes(); }
  // Image2D extents: width W, height N * ceil(C/4) * H (one texel = 4 channels).
  size_t imageWidth() const { return static_cast<size_t>(shape.w); }
  size_t imageHeight() const { return static_cast<size_t>(shape.n * shape.slices() * shape.h); }
  // Physical element index of logical (n, c, h*W + w) for buffer storage.
  size_t physicalIndex(int64_t n, int64_t c, int64_t hw) const;
  // Empty when this device can hold the tensor, else why not (one line).
  std::string unsupportedReason(const DeviceCaps& dev) const;
  std::string text() const;  // "2x320x64x64 f32.buffer.nchw"
};

}  // namespace sdspeed
