// The concat family: channel concatenation a [N, C1, H, W] ++ b [N, C2, H, W] ->
// y [N, C1 + C2, H, W] (the UNet's skip connections). The problem's shape is a's;
// attribute c2 is b's channel count (default C1).
#pragma once

#include "kernels/common/elementwise.h"

namespace sdspeed {

class ConcatFamily : public ElementwiseFamily {
 public:
  ConcatFamily();
  std::vector<TensorSlot> slots() const override;
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;
  // Attribute: c2 (b's channels, a positive integer; default a's C).
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;

  ProblemPtr problem(Shape a, int64_t c2) const { return makeProblem(a, {{"c2", std::to_string(c2)}}); }
};

}  // namespace sdspeed
