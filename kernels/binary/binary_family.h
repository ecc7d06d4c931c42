// The binary family: y = a + b or a * b (attribute fn=add|mul), for residual adds and
// the ResNet time-embedding add. Attribute broadcast=1 makes b [N, C, 1, 1] (one
// value per sample and channel, broadcast over H and W); broadcast=0 (default) gives
// b a's shape. The problem's shape is a's (= y's).
#pragma once

#include "kernels/common/elementwise.h"

namespace sdspeed {

class BinaryFamily : public ElementwiseFamily {
 public:
  BinaryFamily();
  std::vector<TensorSlot> slots() const override;
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;
  Tolerance tolerance(const VariantDef& v, DType dtype) const override;  // slices_f16: half's
  // One add or multiply per output element.
  double minFlops(const Problem& p) const override;
  // Attributes: fn (add, mul; default add), broadcast (0, 1; default 0).
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;

  ProblemPtr problem(Shape a, const std::string& fn, bool broadcast) const;
};

}  // namespace sdspeed
