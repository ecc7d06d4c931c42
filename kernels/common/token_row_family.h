// Families that transform each token of a token tensor along its channels (LayerNorm,
// softmax): a token tensor [B, S, C] is the logical NCHW tensor N=B, C, H=1, W=S, one
// token per (n, hw). They share problems (shape + one float attribute), inputs
// (per-token mean and scale, plus an optional large offset), the two variants
// (`per_item`: a work-item per token; `cooperative`: a work-group per token) and the
// launch rule. Kernels are named <prefix>_per_item / <prefix>_cooperative and take
// the slots' tensors in order, then the attribute as a float.
#pragma once

#include "kernels/family.h"

namespace sdspeed {

struct TokenRowProblem : Problem {
  std::string family;
  std::string attrName;
  Shape dims;
  double attr = 0;
  float inputOffset = 0.0f;  // added to every input: large means / large logits
  std::string text() const override;
  Shape shape() const override { return dims; }
  std::map<std::string, std::string> attributes() const override;
};

class TokenRowFamily : public Family {
 public:
  const std::vector<VariantDef>& variants() const override { return variants_; }
  std::vector<TensorSlot> slots() const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<HostTensor> makeInputs(const Problem& p, std::mt19937_64& rng) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;

  ProblemPtr problem(Shape s, double attr, float inputOffset = 0.0f) const;

 protected:
  // affine: gamma and beta slots between x and y.
  TokenRowFamily(std::string name, std::string kernelPrefix, bool affine, std::string attrName, double attrDefault);
  // The reference from x (and gamma, beta when affine), NCHW, in double.
  virtual std::vector<double> referenceOf(const TokenRowProblem& p, const std::vector<HostTensor>& in) const = 0;
  virtual void validateAttr(double value) const = 0;  // throws Error

  std::string name_, prefix_, attrName_;
  bool affine_;
  double attrDefault_;
  std::vector<VariantDef> variants_;
};

}  // namespace sdspeed
