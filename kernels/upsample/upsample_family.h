// The upsample family: nearest upsampling x [N, C, H, W] -> y [N, C, sH, sW] by the
// integer attribute scale (default 2, SD's Upsample2D). The problem's shape is x's.
#pragma once

#include "kernels/common/elementwise.h"

namespace sdspeed {

class UpsampleFamily : public ElementwiseFamily {
 public:
  UpsampleFamily();
  std::vector<TensorSlot> slots() const override;
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;
  // Attribute: scale (integer 1..8, default 2).
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;
};

}  // namespace sdspeed
