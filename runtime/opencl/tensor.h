// OpenCL's DeviceTensor: a buffer (with an optional canary past its end) or an RGBA
// image2d, or a tensor inside memory someone else allocated (a planner's arena).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/device_tensor.h"
#include "runtime/opencl/context.h"
#include "runtime/tensor_pack.h"

namespace sdspeed {

class ClTensor : public DeviceTensor {
 public:
  // withCanary: allocate kCanaryBytes past the end of a buffer (ignored for images,
  // whose out-of-range writes cannot land in memory we own).
  ClTensor(Context& ctx, const TensorDesc& desc, bool withCanary = false);
  // A tensor in memory someone else allocated (a planner's arena, or another tensor's
  // memory seen with another shape), starting offsetBytes into that buffer, which must
  // hold offsetBytes + desc.bytes(); offsetBytes is a multiple of the element size.
  ClTensor(Context& ctx, const TensorDesc& desc, ClMem memory, uint64_t offsetBytes = 0);

  cl_mem mem() const { return mem_.get(); }
  Context& context() const { return *ctx_; }

  // Sets X_PARAMS (memory object, C, HW, W, and for buffers the element offset) at arg
  // index `index`; returns the next index.
  int setArgs(cl_kernel kernel, int index) const;

 protected:
  void writePhysical(std::span<const uint8_t> bytes) override;
  std::vector<uint8_t> readPhysical() const override;
  void writeTail(const std::vector<uint8_t>& bytes) override;
  std::vector<uint8_t> readTail(size_t n) const override;

 private:
  Context* ctx_;
  ClMem mem_;
};

// The OpenCL tensor behind `t`; throws Error for another backend's tensor.
const ClTensor& asCl(const DeviceTensor& t);
ClTensor& asCl(DeviceTensor& t);

}  // namespace sdspeed
