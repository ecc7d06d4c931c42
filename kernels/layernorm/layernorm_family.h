// The LayerNorm family: normalization over the channels of token tensors.
#pragma once

#include "kernels/family.h"

namespace sdspeed {

struct LayerNormProblem : Problem {
  Shape dims;  // N=B, C, H=1, W=S for a token tensor [B, S, C]
  double eps = 1e-5;
  float inputMean = 0.0f;  // offset added to every input: checks the variance's stability
  std::string text() const override;
  Shape shape() const override { return dims; }
  std::map<std::string, std::string> attributes() const override;
};

class LayerNormFamily : public Family {
 public:
  LayerNormFamily();
  std::string name() const override { return "layernorm"; }
  std::string sourcePath() const override { return "layernorm/layernorm.cl"; }
  const std::vector<VariantDef>& variants() const override { return variants_; }
  std::vector<TensorSlot> slots() const override;

  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<HostTensor> makeInputs(const Problem& p, std::mt19937_64& rng) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;
  // Attributes: eps (default 1e-5).
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;

  static ProblemPtr problem(Shape s, double eps, float inputMean = 0.0f);

 private:
  std::vector<VariantDef> variants_;
};

}  // namespace sdspeed
