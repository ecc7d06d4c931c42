// The GroupNorm family (the paper's specialized GroupNorm kernel): declaration of
// its variants, parameters and constraints, its problems, and its launch rules.
#pragma once

#include "kernels/family.h"
#include "reference/groupnorm.h"

namespace sdspeed {

struct GroupNormProblem : Problem {
  Shape dims;
  GroupNormAttrs attrs;
  float inputMean = 0.0f;  // offset added to every input: checks the variance's stability
  std::string text() const override;
  Shape shape() const override { return dims; }
  std::map<std::string, std::string> attributes() const override;
};

class GroupNormFamily : public Family {
 public:
  GroupNormFamily();
  std::string name() const override { return "groupnorm"; }
  std::string sourcePath() const override { return "groupnorm/groupnorm.cl"; }
  const std::vector<VariantDef>& variants() const override { return variants_; }
  std::vector<TensorSlot> slots() const override;

  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<HostTensor> makeInputs(const Problem& p, std::mt19937_64& rng) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;
  Tolerance tolerance(const VariantDef& v, DType dtype) const override;  // one_pass_f16: half's
  // Attributes: g (groups, default 32), eps (1e-5), silu (0/1), residual (0/1).
  ProblemPtr makeProblem(const Shape& shape,
                         const std::map<std::string, std::string>& attrs) const override;
  size_t minBytes(const Problem& p, const StorageFormat& f) const override;
  // Per element: mean 1 (add), variance 3 (subtract, square, add), normalize 2
  // ((x - mean) * rstd), affine 2 (* gamma + beta) = 8; SiLU 4 (negate, exp, add,
  // divide); residual 1 (add). Per group: 4 (mean and variance divides, + eps, rsqrt).
  double minFlops(const Problem& p) const override;

  std::string unsupportedReason(const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                const StorageFormat& f, const DeviceCaps& dev) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                      const Problem& prob, const StorageFormat& f) const override;

  static ProblemPtr problem(Shape s, int groups, double eps, bool silu, bool residual,
                            float inputMean = 0.0f);

 protected:
  std::vector<VariantDef> variants_;
};

}  // namespace sdspeed
