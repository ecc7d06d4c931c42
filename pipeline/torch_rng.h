// PyTorch's CPU generator, reproduced: torch.manual_seed(seed) followed by
// torch.randn(shape) (float32) gives the same numbers as TorchGenerator(seed).randn(n),
// so a run seeded like a diffusers run starts from the same initial latents.
//
// What torch does (ATen: CPUGeneratorImpl, core/DistributionsHelper.h,
// native/cpu/DistributionTemplates.h, native/cpu/avx_mathfun.h):
//  - the engine is the standard 32-bit Mersenne Twister seeded with the low 32 bits of
//    the seed (identical to std::mt19937);
//  - a float uniform in [0, 1) is the low 24 bits of one 32-bit draw times 2^-24;
//    a double uniform the low 53 bits of a 64-bit draw (first 32-bit draw = high half)
//    times 2^-53;
//  - randn of a contiguous float32 tensor with >= 16 elements: first ALL n float
//    uniforms are drawn in order, then each block of 16 becomes 16 normals by
//    Box-Muller: for j < 8, u1 = 1 - u[j], u2 = u[j + 8],
//    out[j] = sqrt(-2 log u1) cos(2 pi u2), out[j + 8] = ... sin(2 pi u2);
//    when n % 16 != 0, 16 fresh uniforms are drawn and the LAST 16 elements
//    recomputed from them;
//  - randn with fewer than 16 elements uses double Box-Muller, one output per call,
//    caching the second (sine) value in the generator for the next call.
//
// The log/sin/cos of the >= 16 path depend on torch's CPU kernel. On x86 builds whose
// ATen CPU capability is AVX2 (torch.backends.cpu.get_cpu_capability() == "AVX2", the
// usual one) it is the Cephes-style polynomial log256_ps/sincos256_ps compiled by GCC
// with FMA contraction; TorchCpuKernel::Avx2 reproduces those operations bit for
// bit (tests: the tiny-sd-a fixture's init_latents, all 1024 values identical). Other
// builds (ARM, the AVX512 capability) call libm's float logf/cosf/sinf:
// TorchCpuKernel::Scalar does that, equal to torch on the same libm.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace sdspeed {

enum class TorchCpuKernel { Avx2, Scalar };

class TorchGenerator {
 public:
  // torch.manual_seed(seed) (also clears the cached normal, as torch does).
  explicit TorchGenerator(uint64_t seed);

  uint32_t random();    // one 32-bit engine draw
  uint64_t random64();  // two draws, the first is the high half
  float uniformFloat();    // [0, 1), 24 bits
  double uniformDouble();  // [0, 1), 53 bits

  // torch.randn(n) in float32 (any shape with n elements: the order is the memory order).
  std::vector<float> randn(int64_t n, TorchCpuKernel kernel = TorchCpuKernel::Avx2);

 private:
  double normalDouble();  // at::normal_distribution<double>(0, 1), with the cache
  std::mt19937 engine_;
  std::optional<double> nextDoubleNormal_;
};

// torch.manual_seed(seed); torch.randn(shape) — the product of shape elements.
std::vector<float> torchRandn(uint64_t seed, const std::vector<int64_t>& shape,
                              TorchCpuKernel kernel = TorchCpuKernel::Avx2);

}  // namespace sdspeed
