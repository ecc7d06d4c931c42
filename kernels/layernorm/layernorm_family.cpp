#include "kernels/layernorm/layernorm_family.h"

#include "kernels/common/half_variant.h"
#include "reference/layernorm.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {

std::vector<ProblemPtr> LayerNormFamily::checkProblems(bool full) const {
  std::vector<ProblemPtr> out = {
      problem({1, 6, 1, 5}, 1e-5),             // C % 4 == 2
      problem({3, 13, 1, 9}, 1e-5),            // C % 4 == 1, odd token count
      problem({1, 40, 1, 64}, 1e-5, 1000.0f),  // large mean: no cancellation
      problem({2, 768, 1, 77}, 1e-5),          // CLIP text encoder
      problem({2, 320, 1, 256}, 1e-5),         // SD 1.5 transformer, 16x16 tokens, C=320
  };
  if (!full) return out;
  // SD 1.5 at 512x512 (batch 2): the transformer blocks' norms at 64x64, 32x32, 16x16, 8x8.
  for (auto [c, t] : {std::pair<int64_t, int64_t>{320, 4096}, {640, 1024}, {1280, 256}, {1280, 64}})
    out.push_back(problem({2, c, 1, t}, 1e-5));
  return out;
}

double LayerNormFamily::minFlops(const Problem& p) const {
  const Shape s = p.shape();  // tokens: N * H * W, each of C channels
  return 8.0 * static_cast<double>(s.elements()) + 4.0 * static_cast<double>(s.n * s.h * s.w);
}

Tolerance LayerNormFamily::tolerance(DType dtype) const {
  // As GroupNorm (groupnorm_family.cpp): O(1) outputs, float statistics over C <= 1280
  // values per token with relative errors far under 1e-5; a mean near 1000 is kept
  // exact by the shift. f16 storage adds the output's rounding (2^-11 relative).
  if (dtype == DType::F32) return {2e-4, 2e-4, 2e-5};
  return {1e-3, 1e-3, 1e-3};
}

Tolerance LayerNormFamily::tolerance(const VariantDef& v, DType dtype) const {
  if (!computesInHalf(v)) return tolerance(dtype);
  // cooperative_f16: statistics in f32 over the C channels (so no growth with C); per
  // element five half roundings (u = 2^-11 = 4.9e-4: x - K, minus the mean, times rstd,
  // the affine FMA, gamma and beta themselves) of values up to ~8, the affine able to
  // cancel. Emulated (scripts/half-arithmetic-sim.py, C = 1280): at rtol 4e-3 an atol of
  // 2.1e-3, relL2 5.4e-4; as GroupNorm's, 8e-3 / 8e-3 / 2e-3.
  return {8e-3, 8e-3, 2e-3};
}

std::vector<double> LayerNormFamily::referenceOf(const TokenRowProblem& p, const std::vector<HostTensor>& in) const {
  return layerNormReference(p.dims, p.attr, in[0].data, in[1].data, in[2].data);
}

void LayerNormFamily::validateAttr(double eps) const {
  if (!(eps > 0)) throw Error("layernorm eps must be positive");
}

}  // namespace sdspeed
