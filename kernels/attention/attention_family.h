// Multi-head attention as a family: `naive` (scores, softmax, PV: three kernels and
// the S x L matrix written twice), `partially_fused_softmax` (the softmax reduced to
// per-row statistics that the PV kernel applies while loading the raw scores) and
// `flash` (one kernel, online softmax, no S x L buffer). kernels/attention/README.md
// says what each saves and where each wins.
#pragma once

#include "kernels/family.h"

namespace sdspeed {

struct AttentionProblem : Problem {
  int64_t batch = 1, heads = 1, headDim = 4, queries = 1, keys = 1;
  bool causal = false;
  bool mask = false;         // an additive mask tensor [B, 1, S, L] is present
  double scale = 0;          // 0: the default 1/sqrt(D)
  float maskOffset = 0.0f;   // test inputs: a per-row +-offset in the mask (large logits)
  double effectiveScale() const;
  std::string text() const override;
  Shape shape() const override;  // Q's shape [B, H*D, 1, S]
  std::map<std::string, std::string> attributes() const override;
};

class AttentionFamily : public Family {
 public:
  AttentionFamily();
  std::string name() const override { return "attention"; }
  std::string sourcePath() const override { return "attention/attention.cl"; }
  const std::vector<VariantDef>& variants() const override { return variants_; }
  // q, k, v (activations), mask (f32 parameter, [B, 1, S, L] or one unused element), out.
  std::vector<TensorSlot> slots() const override;
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<HostTensor> makeInputs(const Problem& p, std::mt19937_64& rng) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;
  Tolerance tolerance(const VariantDef& v, DType dtype) const override;
  // q, k, v and out once (and the mask when the op has one; the unused placeholder is
  // not counted).
  size_t minBytes(const Problem& p, const StorageFormat& f) const override;
  // Per score that the mask leaves (all S*L, or those with l <= s when causal): 2D for
  // Q K^T, 2D for P V, and 6 for the softmax (scale, max, subtract, exp, sum, divide).
  double minFlops(const Problem& p) const override;
  // Shape: Q's [B, H*D, 1, S]. Attributes: heads (default 1), kv (key length L,
  // default S), causal (0/1), mask (0/1: an additive mask input), scale (default
  // 1/sqrt(D)).
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  std::string unsupportedReason(const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                const StorageFormat& f, const DeviceCaps& dev) const override;
  // flash's program depends on the head size: built in prepare, not ahead.
  void prebuild(Context& ctx, const VariantDef& v, const ParamPoint& p, const StorageFormat& f) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;

  static ProblemPtr problem(int64_t batch, int64_t heads, int64_t headDim, int64_t queries, int64_t keys,
                            bool causal = false, bool mask = false, float maskOffset = 0.0f);
  // Scratch memory a variant allocates for a problem, in bytes.
  static size_t scratchBytes(const VariantDef& v, const AttentionProblem& p);
  // Vulkan's flash for D > 160 (attention_flash_wide.glsl): the invocations a row's D/4
  // slices are split across, the least power of two leaving each at most 16 slices.
  static int flashWideParts(int64_t headDim);

  // flash_coopmat_f16 (tensor cores through VK_NV_cooperative_matrix, Vulkan only;
  // attention_coopmat.cpp): its declaration, name, O columns per work-group (DO, or the
  // head rounded up to CN for DO = 0), shared memory at a head size, device rule (the
  // device's shape list, 32-invocation subgroups) and tolerance.
  static VariantDef coopMatVariant();
  static constexpr const char* kCoopMatVariant = "flash_coopmat_f16";
  static int coopMatColumns(const ParamPoint& p, int64_t headDim);
  static size_t coopMatLocalBytes(const ParamPoint& p, int64_t headDim);
  // O's accumulators per subgroup (in registers across the whole key loop).
  static int coopMatAccumulators(const ParamPoint& p, int64_t headDim);
  static std::string coopMatDeviceRule(const ParamPoint& p, const DeviceCaps& dev);
  static Tolerance coopMatTolerance();

 private:
  std::vector<VariantDef> variants_;
};

}  // namespace sdspeed
