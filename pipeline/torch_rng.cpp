// Built with -ffp-contract=off (pipeline/CMakeLists.txt): every float operation below
// rounds exactly where written; the fused multiply-adds torch's AVX2 build gets from
// GCC's contraction are spelled out with std::fma.
#include "pipeline/torch_rng.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "runtime/error.h"

namespace sdspeed {

namespace {

constexpr double kPi = 3.14159265358979323846;

// The float constant a double literal becomes (as torch's _PS256_CONST tables do).
constexpr float f(double v) { return static_cast<float>(v); }

// Natural log of x in (0, 1] the way torch's AVX2 kernel computes it per lane:
// Cephes logf (x = m * 2^e with m in [sqrt(1/2), sqrt(2)), a degree-9 polynomial in
// m - 1, ln 2 split in two parts), with the multiply-adds GCC fused into FMAs.
float avx2Log(float x) {
  x = std::max(x, std::bit_cast<float>(0x00800000u));  // smallest normal: no subnormals
  uint32_t bits = std::bit_cast<uint32_t>(x);
  float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 127) + 1.0f;
  x = std::bit_cast<float>((bits & ~0x7f800000u) | 0x3f000000u);  // mantissa in [0.5, 1)
  const bool small = x < f(0.707106781186547524);
  const float extra = small ? x : 0.0f;
  x = x - 1.0f;
  if (small) e = e - 1.0f;
  x = x + extra;  // small: 2m - 1, computed as (m - 1) + m

  const float z = x * x;
  static constexpr double kP[] = {-1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                                  1.4249322787E-1,  -1.6668057665E-1, 2.0000714765E-1,
                                  -2.4999993993E-1, 3.3333331174E-1};
  float y = f(7.0376836292E-2);
  for (double p : kP) y = std::fma(y, x, f(p));
  y = y * x;
  y = std::fma(y, z, e * f(-2.12194440e-4));
  y = std::fma(-z, 0.5f, y);
  x = x + y;
  return std::fma(e, f(0.693359375), x);
}

// sin and cos of x >= 0 as torch's AVX2 sincos256_ps computes them (Cephes sinf/cosf:
// reduction by multiples of pi/4 in three parts, one polynomial per octant pair), FMAs
// where GCC fused them.
void avx2SinCos(float x, float& s, float& c) {
  uint32_t signSin = std::bit_cast<uint32_t>(x) & 0x80000000u;
  x = std::fabs(x);
  int32_t j = static_cast<int32_t>(x * f(1.27323954473516));  // 4 / pi, truncated
  j = (j + 1) & ~1;
  const float y = static_cast<float>(j);
  signSin ^= static_cast<uint32_t>(j & 4) << 29;
  const uint32_t signCos = static_cast<uint32_t>(~(j - 2) & 4) << 29;
  const bool sinPoly = (j & 2) == 0;  // sin from the sine polynomial (else swapped)

  x = std::fma(y, f(-0.78515625), x);
  x = std::fma(y, f(-2.4187564849853515625e-4), x);
  x = std::fma(y, f(-3.77489497744594108e-8), x);
  const float z = x * x;

  float yc = std::fma(f(2.443315711809948E-005), z, f(-1.388731625493765E-003));
  yc = std::fma(yc, z, f(4.166664568298827E-002));
  yc = yc * z;
  yc = std::fma(yc, z, -(z * 0.5f));
  yc = yc + 1.0f;

  float ys = std::fma(f(-1.9515295891E-4), z, f(8.3321608736E-3));
  ys = std::fma(ys, z, f(-1.6666654611E-1));
  ys = ys * z;
  ys = std::fma(ys, x, x);

  const float sv = sinPoly ? ys : yc;
  const float cv = sinPoly ? yc : ys;
  s = std::bit_cast<float>(std::bit_cast<uint32_t>(sv) ^ signSin);
  c = std::bit_cast<float>(std::bit_cast<uint32_t>(cv) ^ signCos);
}

// 16 uniforms -> 16 standard normals in place (torch's normal_fill_16, mean 0, std 1).
void boxMuller16(float* d, TorchCpuKernel kernel) {
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - d[j];  // [0, 1) -> (0, 1]
    const float u2 = d[j + 8];
    if (kernel == TorchCpuKernel::Avx2) {
      const float radius = std::sqrt(-2.0f * avx2Log(u1));
      float s, c;
      avx2SinCos(f(2.0f * kPi) * u2, s, c);
      d[j] = radius * c;
      d[j + 8] = radius * s;
    } else {
      const float radius = std::sqrt(-2.0f * std::log(u1));
      const float theta = static_cast<float>(2.0f * kPi * u2);
      d[j] = radius * std::cos(theta);
      d[j + 8] = radius * std::sin(theta);
    }
  }
}

}  // namespace

TorchGenerator::TorchGenerator(uint64_t seed) : engine_(static_cast<uint32_t>(seed & 0xffffffffu)) {}

uint32_t TorchGenerator::random() { return static_cast<uint32_t>(engine_()); }

uint64_t TorchGenerator::random64() {
  const uint64_t hi = random();
  const uint64_t lo = random();
  return (hi << 32) | lo;
}

float TorchGenerator::uniformFloat() {
  return static_cast<float>(random() & ((1u << 24) - 1)) * (1.0f / static_cast<float>(1u << 24));
}

double TorchGenerator::uniformDouble() {
  return static_cast<double>(random64() & ((uint64_t(1) << 53) - 1)) * (1.0 / static_cast<double>(uint64_t(1) << 53));
}

double TorchGenerator::normalDouble() {
  if (nextDoubleNormal_) {
    double v = *nextDoubleNormal_;
    nextDoubleNormal_.reset();
    return v;
  }
  const double u1 = uniformDouble();
  const double u2 = uniformDouble();
  const double r = std::sqrt(-2.0 * std::log1p(-u2));
  const double theta = 2.0 * kPi * u1;
  nextDoubleNormal_ = r * std::sin(theta);
  return r * std::cos(theta);
}

std::vector<float> TorchGenerator::randn(int64_t n, TorchCpuKernel kernel) {
  if (n < 0) throw Error("randn: negative element count " + std::to_string(n));
  std::vector<float> out(static_cast<size_t>(n));
  if (n < 16) {
    for (float& v : out) v = static_cast<float>(normalDouble());
    return out;
  }
  for (float& v : out) v = uniformFloat();
  for (int64_t i = 0; i + 16 <= n; i += 16) boxMuller16(out.data() + i, kernel);
  if (n % 16 != 0) {
    float* tail = out.data() + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = uniformFloat();
    boxMuller16(tail, kernel);
  }
  return out;
}

std::vector<float> torchRandn(uint64_t seed, const std::vector<int64_t>& shape, TorchCpuKernel kernel) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("randn: negative dimension " + std::to_string(d));
    n *= d;
  }
  TorchGenerator gen(seed);
  return gen.randn(n, kernel);
}

}  // namespace sdspeed
