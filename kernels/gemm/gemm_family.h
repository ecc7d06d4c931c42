// The GEMM / Linear family: y = epilogue(x W^T + bias) (+ residual) over the channels
// of an activation, W the Linear weight [out, in]; epilogues none, gelu, gelu_tanh,
// quick_gelu, silu and geglu (diffusers GEGLU over the two halves of the projection).
// Variants `tiled` (register-blocked, local-memory tiles; the tuned one) and `direct`
// (one work-item per 4 outputs, no local memory: the ablation baseline), `direct_f16`,
// and `coopmat_f16` (tensor cores through VK_NV_cooperative_matrix, Vulkan only:
// gemm_coopmat.cpp).
// kernels/gemm/README.md: the design and what each parameter trades.
#pragma once

#include "kernels/family.h"

namespace sdspeed {

struct GemmProblem : Problem {
  Shape x;                       // [B, K, H, W]: K input channels at H*W positions (tokens: Bx Kx1xT)
  int64_t rows = 1;              // attribute n: the Linear's out_features, rows of W
  std::string epilogue = "none"; // none, gelu, gelu_tanh, quick_gelu, silu, geglu
  bool bias = true, residual = false;
  int64_t outChannels() const { return epilogue == "geglu" ? rows / 2 : rows; }
  Shape outShape() const { return {x.n, outChannels(), x.h, x.w}; }
  // "gemm 2x320x1x4096 bias=1 epilogue=geglu n=2560 residual=0"
  std::string text() const override;
  Shape shape() const override { return x; }
  std::map<std::string, std::string> attributes() const override;
};

class GemmFamily : public Family {
 public:
  GemmFamily();
  std::string name() const override { return "gemm"; }
  std::string sourcePath() const override { return "gemm/gemm.cl"; }
  const std::vector<VariantDef>& variants() const override { return variants_; }
  // x (activation), w (f32 [n, K, 1, 1]), bias (f32 [1, n, 1, 1], or one unused
  // element), residual (activation shaped like y, or [1, 1, 1, 1] unused), y.
  std::vector<TensorSlot> slots() const override;
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<HostTensor> makeInputs(const Problem& p, std::mt19937_64& rng) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;
  Tolerance tolerance(const VariantDef& v, DType dtype) const override;  // direct_f16: half's
  // x, w, y once, and bias and residual when the op has them (placeholders not counted).
  size_t minBytes(const Problem& p, const StorageFormat& f) const override;
  // 2 M n K for the product (M = B*H*W positions, an FMA per weight and position), then
  // per product element 1 for the bias; per output element the activation (gelu 5,
  // gelu_tanh 9, quick_gelu 4, silu 4, geglu 6: gelu of the gate and the product, as
  // in the activation family) and 1 for the residual.
  double minFlops(const Problem& p) const override;
  // Shape: x's [B, K, H, W]. Attributes: n (required: out_features, rows of W; even
  // for geglu), epilogue (default none), bias (0/1, default 1), residual (0/1, default 0).
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  // tiled under GEGLU holds twice the w tile: checked here, where the problem is known.
  std::string unsupportedReason(const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                const StorageFormat& f, const DeviceCaps& dev) const override;
  // The GEGLU program (GEGLU=1, twice the accumulators) is built in prepare; prebuild
  // builds the program of every other epilogue.
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;
  // The program prepare builds: scalar accessors (VEC is the kernel's own float4 path,
  // not the accessors' width), so a tuner's build-ahead compiles what the timed run uses.
  void prebuild(Context& ctx, const VariantDef& v, const ParamPoint& p, const StorageFormat& f) const override;

  static ProblemPtr problem(Shape x, int64_t rows, const std::string& epilogue, bool bias = true,
                            bool residual = false);
  // The kernels' code of an epilogue (gemm.cl and gemm.comp): 0 none, 1 gelu,
  // 2 gelu_tanh, 3 quick_gelu, 4 silu, 5 geglu; throws Error for an unknown one.
  static int epilogueCode(const std::string& e);
  // Local memory of a tiled point, with the w tile doubled under GEGLU.
  static size_t tiledLocalBytes(const ParamPoint& p, bool geglu);
  // coopmat_f16 (tensor cores through VK_NV_cooperative_matrix; gemm_coopmat.cpp): its
  // declaration, shared memory (w tile and accumulator scratch doubled under GEGLU), the
  // device rule (Vulkan only; the point's CM x CN x CK must be among the device's NV
  // f16*f16+f32->f32 subgroup shapes; 32-invocation subgroups) and its tolerance.
  static VariantDef coopMatVariant();
  static constexpr const char* kCoopMatVariant = "coopmat_f16";  // its name
  // gemv and gemv_f16 serve problems of at most this many positions in all (B*H*W): each
  // work-group re-reads its weight rows for its one position, so the weights are read
  // B*H*W times (the tiles read them about once); measured only at 2 (session 44).
  static constexpr int64_t kMaxGemvPositions = 8;
  static size_t coopMatLocalBytes(const ParamPoint& p, bool geglu);
  static std::string coopMatDeviceRule(const ParamPoint& p, const DeviceCaps& dev);
  // The same rule for another family's variant on the same tiles and shapes (conv
  // coopmat_f16: kernels/conv/conv_coopmat.cpp); `family` names it in the OpenCL refusal.
  static std::string coopMatDeviceRule(const ParamPoint& p, const DeviceCaps& dev, const std::string& family);
  static Tolerance coopMatTolerance(DType dtype);
  // Split-K (SK): the point's, or 1 for a point recorded before SK existed (a database);
  // its partial sums' bytes, f32 [SK][N][rows][T] (gemm_coopmat.comp); the untuned SK for
  // a problem (VariantDef::fitDefaults: enough work-groups to fill a GPU, within K).
  static int coopMatSplitK(const ParamPoint& p);
  static uint64_t coopMatSplitKBytes(const GemmProblem& g, int splitK);
  static int coopMatDefaultSplitK(const ParamPoint& p, const GemmProblem& g);
  // Split-K's rules, shared with conv coopmat_f16 (whose declaration is this one's):
  // the smallest SK (a power of 2, at most 16) that gives the dispatch of `tiles` output
  // tiles `targetGroups` work-groups while each range keeps `minSteps` of the `steps` K
  // steps; and "" where `bytes` of partial sums fit the device, else the reason.
  static int coopMatFitSplitK(int64_t tiles, int64_t steps, int64_t targetGroups, int64_t minSteps);
  static std::string coopMatSplitKReason(uint64_t bytes, const DeviceCaps& dev);

 private:
  std::vector<VariantDef> variants_;
};

}  // namespace sdspeed
