// The activation family: GELU (exact and tanh), quick_gelu, SiLU and GEGLU, the
// function an attribute of the op (`fn`), one slice-based kernel for all formats.
#pragma once

#include "kernels/family.h"

namespace sdspeed {

struct ActivationProblem : Problem {
  Shape dims;       // the input's shape (for geglu: 2F channels)
  std::string fn;   // gelu, gelu_tanh, quick_gelu, silu, geglu
  std::string text() const override { return "activation " + dims.text() + " fn=" + fn; }
  Shape shape() const override { return dims; }
  std::map<std::string, std::string> attributes() const override { return {{"fn", fn}}; }
};

class ActivationFamily : public Family {
 public:
  ActivationFamily();
  std::string name() const override { return "activation"; }
  std::string sourcePath() const override { return "activation/activation.cl"; }
  const std::vector<VariantDef>& variants() const override { return variants_; }
  std::vector<TensorSlot> slots() const override;
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<HostTensor> makeInputs(const Problem& p, std::mt19937_64& rng) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;
  Tolerance tolerance(const VariantDef& v, DType dtype) const override;  // slices_f16: half's
  // Per output element: gelu 5 (x * 1/sqrt2, erf, + 1, * 0.5, * x); gelu_tanh 9 (x^3 2,
  // * 0.044715, + x, * sqrt(2/pi), tanh, + 1, * 0.5, * x); quick_gelu 4 (* -1.702, exp,
  // + 1, divide); silu 4 (negate, exp, + 1, divide); geglu 6 (gelu of the gate, * hidden).
  double minFlops(const Problem& p) const override;
  // Attribute: fn (one of gelu, gelu_tanh, quick_gelu, silu, geglu; default gelu).
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;

  static ProblemPtr problem(Shape s, const std::string& fn);
  // The kernels' code of a function (activation.cl and activation.comp): 0 gelu,
  // 1 gelu_tanh, 2 quick_gelu, 3 silu, 4 geglu; throws Error for an unknown one.
  static int fnCode(const std::string& fn);

 private:
  std::vector<VariantDef> variants_;
};

}  // namespace sdspeed
