// The reshape family: x [N, C, H, W] -> y [N, C, h, HW / h], the attribute h the
// output's height (default 1: image -> tokens; h=64 on a [2, 320, 1, 4096] token
// tensor gives the 64x64 image back). The problem's shape is x's. With buffer
// storage the bytes do not change (a free reshape); with image2d storage the texel
// rows change width, so this copy kernel is needed (kernels/reshape/reshape.cl).
#pragma once

#include "kernels/common/elementwise.h"

namespace sdspeed {

class ReshapeFamily : public ElementwiseFamily {
 public:
  ReshapeFamily();
  std::vector<TensorSlot> slots() const override;
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;
  // Attribute: h (the output's height, a divisor of H*W; default 1).
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;

  ProblemPtr problem(Shape x, int64_t h) const { return makeProblem(x, {{"h", std::to_string(h)}}); }
};

}  // namespace sdspeed
