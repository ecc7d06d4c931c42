// The LayerNorm family: normalization over the channels of token tensors
// (kernels/common/token_row_family.h), with affine gamma/beta and attribute eps.
#pragma once

#include "kernels/common/token_row_family.h"

namespace sdspeed {

class LayerNormFamily : public TokenRowFamily {
 public:
  LayerNormFamily() : TokenRowFamily("layernorm", "ln", /*affine=*/true, "eps", 1e-5) {}
  std::string name() const override { return "layernorm"; }
  std::string sourcePath() const override { return "layernorm/layernorm.cl"; }
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  Tolerance tolerance(DType dtype) const override;
  Tolerance tolerance(const VariantDef& v, DType dtype) const override;  // cooperative_f16: half's
  // Per element: mean 1, variance 3, normalize 2, affine 2 = 8; per token 4 (mean and
  // variance divides, + eps, rsqrt).
  double minFlops(const Problem& p) const override;

 protected:
  std::vector<double> referenceOf(const TokenRowProblem& p, const std::vector<HostTensor>& in) const override;
  void validateAttr(double eps) const override;
};

}  // namespace sdspeed
