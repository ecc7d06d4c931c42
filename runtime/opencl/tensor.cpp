#include "runtime/opencl/tensor.h"

#include <limits>
#include <string>

#include "runtime/opencl/cl_error.h"

namespace sdspeed {

ClTensor::ClTensor(Context& ctx, const TensorDesc& desc, bool withCanary)
    : DeviceTensor(desc, withCanary && desc.format.storage == Storage::Buffer, 0), ctx_(&ctx) {
  if (std::string why = desc_.unsupportedReason(ctx.device()); !why.empty()) throw Error(why);
  if (desc_.format.storage == Storage::Buffer) {
    mem_ = ctx.createBuffer(desc_.bytes() + (canary_ ? kCanaryBytes : 0));
  } else {
    mem_ = ctx.createImage2D(desc_.imageWidth(), desc_.imageHeight(),
                             desc_.format.dtype == DType::F32 ? CL_FLOAT : CL_HALF_FLOAT);
  }
}

ClTensor::ClTensor(Context& ctx, const TensorDesc& desc, ClMem memory, uint64_t offsetBytes)
    : DeviceTensor(desc, false, offsetBytes), ctx_(&ctx), mem_(std::move(memory)) {
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

void ClTensor::writePhysical(std::span<const uint8_t> bytes) {
  if (desc_.format.storage == Storage::Buffer)
    ctx_->writeBuffer(mem_.get(), bytes.data(), bytes.size(), offset_);
  else
    ctx_->writeImage(mem_.get(), bytes.data(), desc_.imageWidth(), desc_.imageHeight());
}

std::vector<uint8_t> ClTensor::readPhysical() const {
  std::vector<uint8_t> bytes(desc_.bytes());
  if (desc_.format.storage == Storage::Buffer)
    ctx_->readBuffer(mem_.get(), bytes.data(), bytes.size(), offset_);
  else
    ctx_->readImage(mem_.get(), bytes.data(), desc_.imageWidth(), desc_.imageHeight());
  return bytes;
}

void ClTensor::writeTail(const std::vector<uint8_t>& bytes) {
  ctx_->writeBuffer(mem_.get(), bytes.data(), bytes.size(), offset_ + desc_.bytes());
}

std::vector<uint8_t> ClTensor::readTail(size_t n) const {
  std::vector<uint8_t> bytes(n);
  ctx_->readBuffer(mem_.get(), bytes.data(), n, offset_ + desc_.bytes());
  return bytes;
}

int ClTensor::setArgs(cl_kernel kernel, int index) const {
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

const ClTensor& asCl(const DeviceTensor& t) {
  auto* cl = dynamic_cast<const ClTensor*>(&t);
  if (!cl) throw Error("a tensor of another GPU API given to an OpenCL kernel");
  return *cl;
}

ClTensor& asCl(DeviceTensor& t) { return const_cast<ClTensor&>(asCl(static_cast<const DeviceTensor&>(t))); }

}  // namespace sdspeed
