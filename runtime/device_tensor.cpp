#include "runtime/device_tensor.h"

#include <string>

#include "runtime/error.h"
#include "runtime/tensor_pack.h"

namespace sdspeed {

void DeviceTensor::write(std::span<const uint8_t> bytes) {
  ++version_;
  writePhysical(bytes);
}

void DeviceTensor::upload(const std::vector<float>& nchw) { write(packTensor(desc_, nchw)); }

void DeviceTensor::uploadBytes(std::span<const uint8_t> bytes) {
  if (bytes.size() != desc_.bytes())
    throw Error("tensor " + desc_.text() + " holds " + std::to_string(desc_.bytes()) + " bytes, given " +
                std::to_string(bytes.size()));
  write(bytes);
}

std::vector<uint8_t> DeviceTensor::downloadBytes() const { return readPhysical(); }

std::vector<float> DeviceTensor::download() const { return unpackTensor(desc_, readPhysical()); }

void DeviceTensor::poison() {
  std::vector<uint8_t> bytes;
  poisonBytes(desc_, bytes);
  write(bytes);
}

void DeviceTensor::writeCanary() {
  if (!canary_) return;
  writeTail(std::vector<uint8_t>(kCanaryBytes, kCanaryByte));
}

bool DeviceTensor::canaryIntact() const {
  if (!canary_) return true;
  for (uint8_t b : readTail(kCanaryBytes))
    if (b != kCanaryByte) return false;
  return true;
}

}  // namespace sdspeed
