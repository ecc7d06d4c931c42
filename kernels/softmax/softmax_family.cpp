#include "kernels/softmax/softmax_family.h"

#include <cmath>

#include "kernels/common/half_variant.h"
#include "reference/softmax.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {

std::vector<ProblemPtr> SoftmaxFamily::checkProblems(bool full) const {
  std::vector<ProblemPtr> out = {
      problem({1, 6, 1, 5}, 1.0),             // C % 4 == 2
      problem({3, 13, 1, 9}, 0.5),            // C % 4 == 1, odd token count
      problem({1, 40, 1, 64}, 1.0, 100.0f),   // large logits: exp(100) overflows float
      problem({16, 77, 1, 64}, 0.125),        // cross-attention scores, L = 77, D = 64
      problem({2, 256, 1, 64}, 0.158),        // self-attention scores at 16x16, D = 40
  };
  if (!full) return out;
  // Score rows of SD 1.5 at 512x512 (B*H = 16): self-attention L = 1024 and 4096.
  out.push_back(problem({16, 1024, 1, 256}, 0.112));
  out.push_back(problem({16, 4096, 1, 64}, 0.158));
  return out;
}

double SoftmaxFamily::minFlops(const Problem& p) const {
  const Shape s = p.shape();
  return 6.0 * static_cast<double>(s.elements()) + static_cast<double>(s.n * s.h * s.w);
}

Tolerance SoftmaxFamily::tolerance(DType dtype) const {
  // Outputs in (0, 1]. The exponent's argument carries the float rounding of scale*x
  // (up to 100 * 6e-8 = 6e-6 absolute at the large-logit problem), so outputs are
  // right to a relative 1e-5 or so; rtol 5e-5 keeps a margin, atol 1e-7 covers the
  // tiny probabilities. f16 storage rounds outputs to 2^-11 relative and flushes
  // values under 6e-8 (half's smallest subnormal).
  if (dtype == DType::F32) return {1e-7, 5e-5, 2e-5};
  return {1e-6, 1e-3, 1e-3};
}

Tolerance SoftmaxFamily::tolerance(const VariantDef& v, DType dtype) const {
  if (!computesInHalf(v)) return tolerance(dtype);
  // cooperative_f16: the shift v - max and the row's sum in f32 (so no growth with the
  // row's length); in half (u = 2^-11 = 4.9e-4) exp's argument (off by u |v - max|),
  // exp itself, 1 / sum and the product: ~(3 + |v - max|) u relative, and the outputs
  // that carry the mass have |v - max| of a few units. Emulated
  // (scripts/half-arithmetic-sim.py, rows of 40 (+100 logits) to 4096): relL2 <= 3.9e-4,
  // no element over 4e-3 relative. rtol 6e-3 leaves room for a device's half exp; atol
  // 1e-6 covers outputs in half's subnormal range (spacing 6e-8) and those flushed to 0.
  return {1e-6, 6e-3, 2e-3};
}

std::vector<double> SoftmaxFamily::referenceOf(const TokenRowProblem& p, const std::vector<HostTensor>& in) const {
  return softmaxReference(p.dims, p.attr, in[0].data);
}

void SoftmaxFamily::validateAttr(double scale) const {
  if (!std::isfinite(scale) || scale == 0) throw Error("softmax scale must be finite and non-zero");
}

}  // namespace sdspeed
