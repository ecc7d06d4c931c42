// A tensor on the device: descriptor + memory object, with host transfers from and
// to a plain logical NCHW float array (any dtype, storage and layout), poisoning,
// and a canary region past the end of buffer storage for the test harness.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/opencl/context.h"
#include "runtime/tensor_desc.h"

namespace sdspeed {

// Host-side packing between logical NCHW floats and the physical bytes of a
// descriptor (f16 rounds to nearest even; padding lanes are zero).
std::vector<uint8_t> packTensor(const TensorDesc& desc, const std::vector<float>& nchw);
std::vector<float> physicalToFloats(const TensorDesc& desc, const std::vector<uint8_t>& bytes);
std::vector<float> unpackTensor(const TensorDesc& desc, const std::vector<uint8_t>& bytes);
// Physical element indices that are layout padding (NC4HW4 lanes past C).
std::vector<size_t> paddingIndices(const TensorDesc& desc);

class DeviceTensor {
 public:
  static constexpr size_t kCanaryBytes = 256;
  static constexpr uint8_t kCanaryByte = 0xA5;

  // withCanary: allocate kCanaryBytes past the end of a buffer (ignored for images,
  // whose out-of-range writes cannot land in memory we own).
  DeviceTensor(Context& ctx, const TensorDesc& desc, bool withCanary = false);
  // A tensor in memory someone else allocated (a planner's arena, or another tensor's
  // memory seen with another shape), starting offsetBytes into that buffer, which must
  // hold offsetBytes + desc.bytes(); offsetBytes is a multiple of the element size.
  DeviceTensor(Context& ctx, const TensorDesc& desc, ClMem memory, uint64_t offsetBytes = 0);

  const TensorDesc& desc() const { return desc_; }
  cl_mem mem() const { return mem_.get(); }
  uint64_t offsetBytes() const { return offset_; }
  // Counts the host writes into the tensor: a cache of something derived from its
  // contents (conv's transformed weights) is stale once this moves.
  uint64_t version() const { return version_; }
  bool hasCanary() const { return canary_; }

  void upload(const std::vector<float>& nchw);
  // The physical bytes as packTensor makes them (int8/int4 blocks read from a file).
  void uploadBytes(const std::vector<uint8_t>& bytes);
  std::vector<float> download() const;
  std::vector<uint8_t> downloadBytes() const;  // physical bytes, padding included
  void poison();                               // every physical element (pads too) NaN
  void writeCanary();
  bool canaryIntact() const;

  // Sets X_PARAMS (memory object, C, HW, W, and for buffers the element offset) at arg
  // index `index`; returns the next index.
  int setArgs(cl_kernel kernel, int index) const;

 private:
  void writeBytes(const std::vector<uint8_t>& bytes);

  Context* ctx_;
  TensorDesc desc_;
  bool canary_;
  ClMem mem_;
  uint64_t offset_ = 0;
  uint64_t version_ = 0;
};

}  // namespace sdspeed
