// 2-D convolution as a family (issue #5): `direct`, `im2col_gemm`, `conv1x1` and
// Winograd `winograd_f2x2_3x3`, `winograd_f4x4_3x3`, `winograd_f6x6_3x3`, each with the
// fused epilogue of a ResNet block (bias, per-(batch, channel) time embedding,
// residual). kernels/conv/README.md gives memory, multiplications and measured
// accuracy per variant.
#pragma once

#include "kernels/family.h"
#include "reference/conv.h"

namespace sdspeed {

struct ConvProblem : Problem {
  ConvDims dims;
  bool bias = true, temb = false, residual = false;
  std::string text() const override;  // "conv 2x320x64x64 bias=1 cout=320 k=3 pad=1 residual=0 stride=1 temb=0"
  Shape shape() const override { return {dims.batch, dims.cin, dims.height, dims.width}; }
  std::map<std::string, std::string> attributes() const override;
  Shape outShape() const { return {dims.batch, dims.cout, dims.outHeight(), dims.outWidth()}; }
};

// What a variant allocates besides the op's tensors, in bytes.
struct ConvScratch {
  size_t weights = 0;  // packed / Winograd-transformed weights, all channels (resident: per weight buffer, cached)
  size_t input = 0;    // im2col columns, or the transformed input planes V
  size_t output = 0;   // the GEMM's output planes M (Winograd), or coopmat_f16's split-K partial sums
  // Derived weights made per call are made per block of blockChannels output channels
  // (ConvFamily::perCallBlock), into one scratch region of weightsBlock bytes; Winograd
  // then also runs per block of blockTiles tiles (perCallTiles): input and output hold
  // one block (inputBlock, outputBlock; the whole input / output for the others).
  int64_t blockChannels = 0, blockTiles = 0;
  size_t weightsBlock = 0, inputBlock = 0, outputBlock = 0;
  size_t total() const { return weights + input + output; }
};

class ConvFamily : public Family {
 public:
  ConvFamily();
  std::string name() const override { return "conv"; }
  std::string sourcePath() const override { return "conv/conv.cl"; }
  const std::vector<VariantDef>& variants() const override { return variants_; }
  // x (activation), weight [Cout, Cin, k, k] and bias [1, Cout, 1, 1] (f32 parameters),
  // temb [N, Cout, 1, 1] and residual [N, Cout, Ho, Wo] (activations), y. Unused
  // bias/temb/residual are one-element placeholders.
  std::vector<TensorSlot> slots() const override;
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  // x ~ N(0, 1), weight ~ N(0, 1/fan_in) (fan_in = Cin*k*k), bias ~ N(0, 0.1^2),
  // temb ~ N(0, 1), residual ~ N(0, 1): outputs of order 1, as in the network.
  std::vector<HostTensor> makeInputs(const Problem& p, std::mt19937_64& rng) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;  // the direct variants'
  Tolerance tolerance(const VariantDef& v, DType dtype) const override;
  // Shape: x's. Attributes: cout (default Cin), k (3 or 1, default 3), stride (1 or 2,
  // default 1), pad (default k/2, < k), bias (0/1, default 1), temb (0/1), residual (0/1).
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  // x, weight, y, and bias / temb / residual when present.
  size_t minBytes(const Problem& p, const StorageFormat& f) const override;
  // 2 * N*Cout*Ho*Wo * Cin*k*k (one FMA per tap), + 1 per output for each of bias,
  // temb, residual. Every variant is counted so (Winograd: effective FLOP/s).
  double minFlops(const Problem& p) const override;
  std::string unsupportedReason(const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                const StorageFormat& f, const DeviceCaps& dev) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;

  static ProblemPtr problem(Shape x, int64_t cout, int k = 3, int stride = 1, bool bias = true, bool temb = false,
                            bool residual = false, int pad = -1);
  // pt: the point (its GEMM tile TM sets the per-call block; unused by `direct`).
  static ConvScratch scratch(const VariantDef& v, const ConvProblem& p, const ParamPoint& pt);
  // Output channels per block of the per-call weight transform, for derived weights of
  // rowBytes per output channel (the rule is at its definition).
  static int64_t perCallBlock(const VariantDef& v, const ParamPoint& pt, int64_t coutP, size_t rowBytes);
  // Winograd's tiles per per-call block, for V and M planes of tileBytes per tile.
  static int64_t perCallTiles(const VariantDef& v, const ParamPoint& pt, int64_t tilesP, size_t tileBytes);
  static constexpr size_t kPerCallBlockBytes = 16ull << 20;
  // Winograd output tile m (2, 4, 6), 0 for the other variants.
  static int winogradTile(const VariantDef& v);
  // Multiplications per output and input channel: k*k for direct/GEMM, (m+2)^2/m^2 for
  // Winograd F(m x m, 3 x 3).
  static double multiplicationsPerOutput(const VariantDef& v, const ConvProblem& p);
  // winograd_f2x2_coopmat_f16 (issue #22; conv_winograd_coopmat.cpp): Winograd F(2x2, 3x3)
  // with gemm coopmat_f16's GEMM over the planes, Vulkan only, Cin % 8 == 0.
  static VariantDef winogradCoopMatVariant();
  static constexpr const char* kWinogradCoopMatVariant = "winograd_f2x2_coopmat_f16";
  static bool isWinogradCoopMat(const VariantDef& v);
  // coopmat_f16 (issue #22; conv_coopmat.cpp): the implicit GEMM on tensor cores through
  // VK_NV_cooperative_matrix, Vulkan only, any k / stride / pad; gemm coopmat_f16's
  // parameters, shared memory and device rule without GEGLU.
  static VariantDef coopMatVariant();
  static constexpr const char* kCoopMatVariant = "coopmat_f16";
  static bool isCoopMat(const VariantDef& v);
  // Whether coopmat_f16 runs problem d with tap-major K and derived f16 weight rows
  // (ConvScratch::weights; conv_coopmat.cpp says when and why).
  static bool coopMatTapMajor(const ConvDims& d);
  static Tolerance coopMatTolerance(DType dtype);
  // (coopmat_f16's split-K factor SK: GemmFamily::coopMatSplitK, the declaration being GEMM's.)
  // The SK its fitDefaults rule gives problem d at point p's tiles and K step.
  static int coopMatDefaultSplitK(const ParamPoint& p, const ConvDims& d);

 private:
  std::vector<VariantDef> variants_;
};

}  // namespace sdspeed
