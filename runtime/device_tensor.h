// A tensor in some backend's device memory: its descriptor, host transfers from and to a
// plain logical NCHW float array (any dtype, storage and layout), poisoning, and a canary
// region past the end of buffer storage for the test harness. Each backend implements
// the raw transfers (runtime/opencl/tensor.h, runtime/vulkan/); the packing is shared
// (runtime/tensor_pack.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/tensor_desc.h"

namespace sdspeed {

class DeviceTensor {
 public:
  static constexpr size_t kCanaryBytes = 256;
  static constexpr uint8_t kCanaryByte = 0xA5;

  virtual ~DeviceTensor() = default;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  const TensorDesc& desc() const { return desc_; }
  // Where the tensor starts in its memory object (a planner's arena holds many).
  uint64_t offsetBytes() const { return offset_; }
  // Counts the host writes into the tensor: a cache of something derived from its
  // contents (conv's transformed weights) is stale once this moves.
  uint64_t version() const { return version_; }
  bool hasCanary() const { return canary_; }

  void upload(const std::vector<float>& nchw);
  // The physical bytes as packTensor makes them (int8/int4 blocks read from a file).
  // A span: a mapped checkpoint's bytes go to the device without a host copy first.
  void uploadBytes(std::span<const uint8_t> bytes);
  std::vector<float> download() const;
  std::vector<uint8_t> downloadBytes() const;  // physical bytes, padding included
  void poison();                               // every physical element (pads too) NaN
  void writeCanary();
  bool canaryIntact() const;

 protected:
  DeviceTensor(const TensorDesc& desc, bool canary, uint64_t offsetBytes)
      : desc_(desc), canary_(canary), offset_(offsetBytes) {}
  // The backend's transfers: the tensor's whole physical bytes, and `n` bytes past its
  // end (the canary; buffers only).
  virtual void writePhysical(std::span<const uint8_t> bytes) = 0;
  virtual std::vector<uint8_t> readPhysical() const = 0;
  virtual void writeTail(const std::vector<uint8_t>& bytes) = 0;
  virtual std::vector<uint8_t> readTail(size_t n) const = 0;

  TensorDesc desc_;
  bool canary_;
  uint64_t offset_;

 private:
  void write(std::span<const uint8_t> bytes);
  uint64_t version_ = 0;
};

}  // namespace sdspeed
