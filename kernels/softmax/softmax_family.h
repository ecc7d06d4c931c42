// The softmax family: softmax(scale * x) over the channels of token tensors
// (kernels/common/token_row_family.h), attribute scale.
#pragma once

#include "kernels/common/token_row_family.h"

namespace sdspeed {

class SoftmaxFamily : public TokenRowFamily {
 public:
  SoftmaxFamily() : TokenRowFamily("softmax", "sm", /*affine=*/false, "scale", 1.0) {}
  std::string name() const override { return "softmax"; }
  std::string sourcePath() const override { return "softmax/softmax.cl"; }
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  Tolerance tolerance(DType dtype) const override;
  Tolerance tolerance(const VariantDef& v, DType dtype) const override;  // cooperative_f16: half's
  // softmax(scale * x) per element: scale 1, running max 1 (compare), subtract 1, exp 1,
  // sum 1, normalize 1 (* 1/sum) = 6; per token 1 (the reciprocal).
  double minFlops(const Problem& p) const override;

 protected:
  std::vector<double> referenceOf(const TokenRowProblem& p, const std::vector<HostTensor>& in) const override;
  void validateAttr(double scale) const override;
};

}  // namespace sdspeed
