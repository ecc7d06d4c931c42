#include "runtime/quant/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/error.h"

// Built with -ffp-contract=off (runtime/CMakeLists.txt): q4_0's x * id + 8.5 must be
// rounded twice, as ggml's reference computes it, not fused into one FMA (which
// arm64 compilers would otherwise do, changing some nibbles).

namespace sdspeed::quant {

size_t blockBytes(Format f) { return f == Format::Q8_0 ? 2 + kBlock : 2 + kBlock / 2; }
const char* formatName(Format f) { return f == Format::Q8_0 ? "q8_0" : "q4_0"; }
const char* sdspeedName(Format f) { return f == Format::Q8_0 ? "int8" : "int4"; }

uint16_t f32ToF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | (x > 0x7f800000u ? 0x7e00 : 0x7c00);  // NaN (quiet), inf
  if (x >= 0x477ff000u) return sign | 0x7c00;  // >= 65520: rounds past the largest half
  const uint32_t e = x >> 23;
  if (x < 0x38800000u) {  // below 2^-14: a half subnormal (or zero), in units of 2^-24
    const uint32_t shift = 126 - e;  // value = m 2^(e-150) = (m >> shift) units
    if (shift > 24) return sign;     // under half a unit
    const uint32_t m = (x & 0x7fffffu) | 0x800000u;
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;  // may carry into the smallest normal
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t h = ((e - 112) << 10) | ((x & 0x7fffffu) >> 13);
  const uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // a carry moves into the exponent
  return static_cast<uint16_t>(sign | h);
}

float f16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t x;
  if (e == 0x1f) {
    x = sign | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);  // exact: m < 2^10
    return sign ? -v : v;
  } else {
    x = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

namespace {

void putScale(uint8_t* block, float d) {
  const uint16_t h = f32ToF16(d);
  block[0] = static_cast<uint8_t>(h & 0xff);  // little-endian, as ggml files are
  block[1] = static_cast<uint8_t>(h >> 8);
}

float getScale(const uint8_t* block) { return f16ToF32(static_cast<uint16_t>(block[0] | (block[1] << 8))); }

void quantizeQ8(const float* x, uint8_t* y) {
  float amax = 0.0f;
  for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  putScale(y, d);
  for (int j = 0; j < kBlock; ++j)
    y[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));  // |q| <= 127
}

void quantizeQ4(const float* x, uint8_t* y) {
  // The value of largest magnitude, sign kept; the first one on a tie (strict <).
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kBlock; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  const float d = max / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  putScale(y, d);
  for (int j = 0; j < kBlock / 2; ++j) {
    // x * id lies in [-8, 8] (the max maps to -8), so + 8.5 is in [0.5, 16.5]: the
    // truncating conversion gives 0..16, clamped to 15 (the +8 of a block's extreme
    // positive value when it is not the max itself).
    const float x0 = x[j] * id, x1 = x[kBlock / 2 + j] * id;
    const int q0 = std::min(15, static_cast<int>(x0 + 8.5f));
    const int q1 = std::min(15, static_cast<int>(x1 + 8.5f));
    y[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

}  // namespace

void quantizeBlocks(Format f, const float* x, int64_t n, uint8_t* out) {
  if (n % kBlock) throw Error("quantizeBlocks: " + std::to_string(n) + " values are not whole blocks of 32");
  for (int64_t b = 0; b < n / kBlock; ++b) {
    uint8_t* y = out + static_cast<size_t>(b) * blockBytes(f);
    if (f == Format::Q8_0) quantizeQ8(x + b * kBlock, y);
    else quantizeQ4(x + b * kBlock, y);
  }
}

void dequantizeBlocks(Format f, const uint8_t* blocks, int64_t n, float* out) {
  if (n % kBlock) throw Error("dequantizeBlocks: " + std::to_string(n) + " values are not whole blocks of 32");
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const uint8_t* y = blocks + static_cast<size_t>(b) * blockBytes(f);
    float* o = out + b * kBlock;
    const float d = getScale(y);
    if (f == Format::Q8_0) {
      for (int j = 0; j < kBlock; ++j) o[j] = static_cast<float>(static_cast<int8_t>(y[2 + j])) * d;
    } else {
      for (int j = 0; j < kBlock / 2; ++j) {
        o[j] = static_cast<float>((y[2 + j] & 0x0f) - 8) * d;
        o[kBlock / 2 + j] = static_cast<float>((y[2 + j] >> 4) - 8) * d;
      }
    }
  }
}

std::vector<uint8_t> quantizeMatrix(const MatrixLayout& l, const float* x, size_t count, const std::string& what) {
  if (l.rows < 1 || l.reduction < 1 || count != static_cast<size_t>(l.rows * l.reduction))
    throw Error(what + ": " + std::to_string(count) + " values do not make " + std::to_string(l.rows) + " rows of " +
                std::to_string(l.reduction));
  const int64_t padded = l.blocksPerRow() * kBlock;
  std::vector<float> row(static_cast<size_t>(padded), 0.0f);  // the tail stays zero
  std::vector<uint8_t> out(l.bytes());
  const size_t rowBytes = static_cast<size_t>(l.blocksPerRow()) * blockBytes(l.format);
  for (int64_t r = 0; r < l.rows; ++r) {
    const float* src = x + r * l.reduction;
    for (int64_t k = 0; k < l.reduction; ++k) {
      if (!std::isfinite(src[k]))
        throw Error(what + ": element " + std::to_string(r * l.reduction + k) + " is not finite (" +
                    std::to_string(src[k]) + "); cannot quantize to " + formatName(l.format));
      row[static_cast<size_t>(k)] = src[k];
    }
    quantizeBlocks(l.format, row.data(), padded, out.data() + static_cast<size_t>(r) * rowBytes);
  }
  return out;
}

std::vector<float> dequantizeMatrix(const MatrixLayout& l, const uint8_t* blocks, size_t byteCount,
                                    const std::string& what) {
  if (byteCount != l.bytes())
    throw Error(what + ": " + std::to_string(byteCount) + " bytes, but " + std::to_string(l.rows) + " rows of " +
                std::to_string(l.reduction) + " in " + formatName(l.format) + " need " + std::to_string(l.bytes()));
  const int64_t padded = l.blocksPerRow() * kBlock;
  std::vector<float> row(static_cast<size_t>(padded));
  std::vector<float> out(static_cast<size_t>(l.rows * l.reduction));
  const size_t rowBytes = static_cast<size_t>(l.blocksPerRow()) * blockBytes(l.format);
  for (int64_t r = 0; r < l.rows; ++r) {
    dequantizeBlocks(l.format, blocks + static_cast<size_t>(r) * rowBytes, padded, row.data());
    std::copy(row.begin(), row.begin() + l.reduction, out.begin() + r * l.reduction);
  }
  return out;
}

int64_t firstNonFiniteScale(Format f, const uint8_t* blocks, size_t byteCount) {
  for (size_t b = 0; b < byteCount / blockBytes(f); ++b)
    if (!std::isfinite(getScale(blocks + b * blockBytes(f)))) return static_cast<int64_t>(b);
  return -1;
}

bool parseFormat(const std::string& name, Format& out) {
  if (name == "q8_0" || name == "Q8_0") out = Format::Q8_0;
  else if (name == "q4_0" || name == "Q4_0") out = Format::Q4_0;
  else return false;
  return true;
}

}  // namespace sdspeed::quant
