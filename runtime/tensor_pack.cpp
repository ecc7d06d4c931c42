#include "runtime/tensor_pack.h"

#include <Eigen/Core>  // Eigen::half: IEEE binary16 with round-to-nearest-even
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/error.h"
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

void poisonBytes(const TensorDesc& d, std::vector<uint8_t>& bytes) {
  bytes.assign(d.bytes(), 0xff);  // quantized: 0xff scales are f16 NaN
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (!isQuantized(d.format.dtype))
    for (size_t i = 0; i < d.physicalElements(); ++i) storeElement(d, bytes.data(), i, nan);
}

}  // namespace sdspeed
