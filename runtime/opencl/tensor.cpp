#include "runtime/opencl/tensor.h"

#include <Eigen/Core>  // Eigen::half: IEEE binary16 with round-to-nearest-even
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/opencl/cl_error.h"
#include "runtime/quant/quant.h"

namespace sdspeed {
namespace {

void storeElement(const TensorDesc& d, uint8_t* base, size_t i, float v) {
  if (d.format.dtype == DType::F32) {
    std::memcpy(base + 4 * i, &v, 4);
  } else {
    uint16_t bits = Eigen::numext::bit_cast<uint16_t>(Eigen::half(v));
    std::memcpy(base + 2 * i, &bits, 2);
  }
}

float loadElement(const TensorDesc& d, const uint8_t* base, size_t i) {
  if (d.format.dtype == DType::F32) {
    float v;
    std::memcpy(&v, base + 4 * i, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, base + 2 * i, 2);
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
}

void checkSize(const TensorDesc& d, size_t n) {
  if (n != static_cast<size_t>(d.shape.elements()))
    throw Error("tensor " + d.shape.text() + " needs " + std::to_string(d.shape.elements()) +
                " values, got " + std::to_string(n));
}

// A quantized tensor's rows are its n, each reduction c*h*w (OIHW, Linear [out, in]).
quant::MatrixLayout quantLayout(const TensorDesc& d) {
  return {d.format.dtype == DType::Q8_0 ? quant::Format::Q8_0 : quant::Format::Q4_0, d.shape.n,
          d.shape.c * d.shape.hw()};
}

}  // namespace

std::vector<uint8_t> packTensor(const TensorDesc& d, const std::vector<float>& nchw) {
  checkSize(d, nchw.size());
  if (isQuantized(d.format.dtype)) return quant::quantizeMatrix(quantLayout(d), nchw.data(), nchw.size(), d.text());
  std::vector<uint8_t> out(d.bytes(), 0);  // padding lanes stay zero
  const Shape& s = d.shape;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t hw = 0; hw < s.hw(); ++hw)
        storeElement(d, out.data(), d.physicalIndex(n, c, hw), nchw[((n * s.c) + c) * s.hw() + hw]);
  return out;
}

std::vector<float> physicalToFloats(const TensorDesc& d, const std::vector<uint8_t>& bytes) {
  if (isQuantized(d.format.dtype)) return unpackTensor(d, bytes);  // the values the blocks hold
  std::vector<float> out(d.physicalElements());
  for (size_t i = 0; i < out.size(); ++i) out[i] = loadElement(d, bytes.data(), i);
  return out;
}

std::vector<float> unpackTensor(const TensorDesc& d, const std::vector<uint8_t>& bytes) {
  if (bytes.size() < d.bytes()) throw Error("tensor data for " + d.text() + " is short");
  if (isQuantized(d.format.dtype)) return quant::dequantizeMatrix(quantLayout(d), bytes.data(), d.bytes(), d.text());
  const Shape& s = d.shape;
  std::vector<float> out(static_cast<size_t>(s.elements()));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t hw = 0; hw < s.hw(); ++hw)
        out[((n * s.c) + c) * s.hw() + hw] = loadElement(d, bytes.data(), d.physicalIndex(n, c, hw));
  return out;
}

std::vector<size_t> paddingIndices(const TensorDesc& d) {
  std::vector<size_t> out;
  if (d.format.layout != Layout::NC4HW4 || d.shape.c % 4 == 0) return out;
  const Shape& s = d.shape;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = s.c; c < s.slices() * 4; ++c)
      for (int64_t hw = 0; hw < s.hw(); ++hw) out.push_back(d.physicalIndex(n, c, hw));
  return out;
}

DeviceTensor::DeviceTensor(Context& ctx, const TensorDesc& desc, bool withCanary)
    : ctx_(&ctx), desc_(desc), canary_(withCanary && desc.format.storage == Storage::Buffer) {
  if (std::string why = desc_.unsupportedReason(ctx.device()); !why.empty()) throw Error(why);
  if (desc_.format.storage == Storage::Buffer) {
    mem_ = ctx.createBuffer(desc_.bytes() + (canary_ ? kCanaryBytes : 0));
  } else {
    mem_ = ctx.createImage2D(desc_.imageWidth(), desc_.imageHeight(),
                             desc_.format.dtype == DType::F32 ? CL_FLOAT : CL_HALF_FLOAT);
  }
}

DeviceTensor::DeviceTensor(Context& ctx, const TensorDesc& desc, ClMem memory, uint64_t offsetBytes)
    : ctx_(&ctx), desc_(desc), canary_(false), mem_(std::move(memory)), offset_(offsetBytes) {
  if (desc_.format.storage != Storage::Buffer) throw Error("a tensor in shared memory must be a buffer tensor");
  if (offset_ % desc_.elementBytes() != 0)
    throw Error("a tensor offset of " + std::to_string(offset_) + " bytes is not a whole number of elements");
  if (offset_ / desc_.elementBytes() > std::numeric_limits<cl_uint>::max())
    throw Error("a tensor offset of " + std::to_string(offset_) + " bytes does not fit a kernel's 32-bit element offset");
  size_t size = 0;
  clCheck(clGetMemObjectInfo(mem_.get(), CL_MEM_SIZE, sizeof(size), &size, nullptr), "clGetMemObjectInfo");
  if (size < offset_ + desc_.bytes())
    throw Error("a " + desc_.shape.text() + " tensor at offset " + std::to_string(offset_) + " needs " +
                std::to_string(offset_ + desc_.bytes()) + " bytes, its memory has " + std::to_string(size));
}

void DeviceTensor::writeBytes(const std::vector<uint8_t>& bytes) {
  ++version_;
  if (desc_.format.storage == Storage::Buffer)
    ctx_->writeBuffer(mem_.get(), bytes.data(), bytes.size(), offset_);
  else
    ctx_->writeImage(mem_.get(), bytes.data(), desc_.imageWidth(), desc_.imageHeight());
}

void DeviceTensor::upload(const std::vector<float>& nchw) { writeBytes(packTensor(desc_, nchw)); }

void DeviceTensor::uploadBytes(const std::vector<uint8_t>& bytes) {
  if (bytes.size() != desc_.bytes())
    throw Error("tensor " + desc_.text() + " holds " + std::to_string(desc_.bytes()) + " bytes, given " +
                std::to_string(bytes.size()));
  writeBytes(bytes);
}

std::vector<uint8_t> DeviceTensor::downloadBytes() const {
  std::vector<uint8_t> bytes(desc_.bytes());
  if (desc_.format.storage == Storage::Buffer)
    ctx_->readBuffer(mem_.get(), bytes.data(), bytes.size(), offset_);
  else
    ctx_->readImage(mem_.get(), bytes.data(), desc_.imageWidth(), desc_.imageHeight());
  return bytes;
}

std::vector<float> DeviceTensor::download() const { return unpackTensor(desc_, downloadBytes()); }

void DeviceTensor::poison() {
  std::vector<uint8_t> bytes(desc_.bytes(), 0xff);  // quantized: 0xff scales are f16 NaN
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (!isQuantized(desc_.format.dtype))
    for (size_t i = 0; i < desc_.physicalElements(); ++i) storeElement(desc_, bytes.data(), i, nan);
  writeBytes(bytes);
}

void DeviceTensor::writeCanary() {
  if (!canary_) return;
  std::vector<uint8_t> c(kCanaryBytes, kCanaryByte);
  ctx_->writeBuffer(mem_.get(), c.data(), c.size(), offset_ + desc_.bytes());
}

bool DeviceTensor::canaryIntact() const {
  if (!canary_) return true;
  std::vector<uint8_t> c(kCanaryBytes);
  ctx_->readBuffer(mem_.get(), c.data(), c.size(), offset_ + desc_.bytes());
  for (uint8_t b : c)
    if (b != kCanaryByte) return false;
  return true;
}

int DeviceTensor::setArgs(cl_kernel kernel, int index) const {
  cl_mem m = mem_.get();
  cl_int dims[3] = {static_cast<cl_int>(desc_.shape.c), static_cast<cl_int>(desc_.shape.hw()),
                    static_cast<cl_int>(desc_.shape.w)};
  clCheck(clSetKernelArg(kernel, index, sizeof(cl_mem), &m), "clSetKernelArg");
  for (int i = 0; i < 3; ++i)
    clCheck(clSetKernelArg(kernel, index + 1 + i, sizeof(cl_int), &dims[i]), "clSetKernelArg");
  if (desc_.format.storage != Storage::Buffer) return index + 4;
  const cl_uint elementOffset = static_cast<cl_uint>(offset_ / desc_.elementBytes());
  clCheck(clSetKernelArg(kernel, index + 4, sizeof(cl_uint), &elementOffset), "clSetKernelArg");
  return index + 5;
}

}  // namespace sdspeed
