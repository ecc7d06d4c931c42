// The harness must catch plausible mistakes in the real kernels, not only in
// hand-written broken ones: each case edits one line of a family's shipped source
// (the edit must apply), runs the family's check problems through checkCase, and
// asserts the mutant fails for the expected reason.
#include <gtest/gtest.h>

#include "test_support.h"  // first: a private PoCL cache folder for this process

#include "kernels/activation/activation_family.h"
#include "kernels/attention/attention_family.h"
#include "kernels/binary/binary_family.h"
#include "kernels/concat/concat_family.h"
#include "kernels/conv/conv_family.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/groupnorm/groupnorm_family.h"
#include "kernels/layernorm/layernorm_family.h"
#include "kernels/softmax/softmax_family.h"
#include "kernels/timestep/timestep_family.h"
#include "tuning/check.h"

namespace sdspeed {
namespace {

template <typename Base>
class Mutant : public Base {
 public:
  Mutant(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  std::string name() const override { return Base::name() + "_mutant"; }
  std::string sourceText(const Context& ctx) const override {
    std::string s = Base::sourceText(ctx);
    size_t n = 0;
    for (size_t pos = s.find(from_); pos != std::string::npos; pos = s.find(from_, pos + to_.size())) {
      s.replace(pos, from_.size(), to_);
      ++n;
    }
    if (n == 0) throw Error("mutation did not apply: '" + from_ + "' is not in the source");
    return s;
  }

 private:
  std::string from_, to_;
};

Context& ctx() {
  static Context c(selectDevice(listDevices(), ""), ContextOptions{});
  return c;
}

struct Tally {
  int ok = 0, inaccurate = 0, buildFailed = 0, padding = 0;
};

Tally run(const Family& fam, const std::string& variant, const std::string& params, const std::string& format) {
  const VariantDef& v = fam.variant(variant);
  const ParamPoint p = v.parsePoint(params);
  Tally t;
  uint64_t seed = 77;
  for (const auto& prob : fam.checkProblems(false)) {
    CheckResult r = checkCase(ctx(), fam, v, p, *prob, StorageFormat::parse(format), ++seed);
    t.ok += r.status == Status::Ok;
    t.inaccurate += r.status == Status::Inaccurate;
    t.buildFailed += r.status == Status::BuildFailed;
    t.padding += r.badPadding > 0;
    if (r.status == Status::BuildFailed) ADD_FAILURE() << r.message;
  }
  return t;
}

TEST(Mutations, LayerNormVarianceWithoutTheMeanSquared) {
  Mutant<LayerNormFamily> fam("max(t.y / x_C - m * m, 0.0f)", "max(t.y / x_C, 0.0f)");
  Tally t = run(fam, "cooperative", "WG=64", "f32.buffer.nchw");
  EXPECT_EQ(t.ok, 0);  // every token's shifted mean is non-zero
  EXPECT_GT(t.inaccurate, 0);
}

TEST(Mutations, LayerNormCountingPaddingLanes) {
  Mutant<LayerNormFamily> fam("(x_LOAD4(n, s, hw) - K) * ln_valid(s, x_C)", "(x_LOAD4(n, s, hw) - K)");
  Tally t = run(fam, "per_item", "WG=64", "f32.buffer.nc4hw4");
  EXPECT_GT(t.inaccurate, 0);  // the problems with C % 4 != 0
  EXPECT_GT(t.ok, 0);          // C % 4 == 0 problems are unaffected: the failure is specific
}

TEST(Mutations, LayerNormSplitDroppingTheLastPart) {
  // The token's sums add all but the last of PARTS work-items' partial sums.
  Mutant<LayerNormFamily> fam("for (int k = 0; k < PARTS; ++k) tot += red[k][tx];",
                              "for (int k = 0; k < PARTS - 1; ++k) tot += red[k][tx];");
  Tally t = run(fam, "split", "PARTS=4,TX=16", "f32.buffer.nc4hw4");
  EXPECT_GT(t.inaccurate, 0);  // every token with a fourth slice (C > 12)
  EXPECT_GT(t.ok, 0);          // C <= 12: the last part walks no slice, so nothing is lost
}

TEST(Mutations, SoftmaxSplitCombiningOnlyTheFirstPart) {
  Mutant<SoftmaxFamily> fam("for (int k = 1; k < PARTS; ++k) tot = sm_combine(tot, red[k][tx])",
                            "for (int k = 1; k < 1; ++k) tot = sm_combine(tot, red[k][tx])");
  Tally t = run(fam, "split", "PARTS=4,TX=16", "f32.buffer.nchw");
  EXPECT_EQ(t.ok, 0);  // every check problem has C > 4: a second part holds a slice
  EXPECT_GT(t.inaccurate, 0);
}

TEST(Mutations, GroupNormOnePassWithoutPaddingZeroing) {
  Mutant<GroupNormFamily> fam("gn_zero_padding(y_ARGS, n, g, G);", ";");
  Tally t = run(fam, "one_pass", "CACHE=8,VEC=4,WG=256", "f32.buffer.nc4hw4");
  EXPECT_GT(t.padding, 0);
  EXPECT_EQ(t.padding, t.inaccurate);
}

TEST(Mutations, GroupNormTwoPassCombiningOnlyTheFirstChunk) {
  // The normalize kernel sums the partial statistics of only the first of SPLIT chunks.
  Mutant<GroupNormFamily> fam("for (int k = 0; k < SPLIT; ++k) {\n      t1 +=", "for (int k = 0; k < 1; ++k) {\n      t1 +=");
  Tally t = run(fam, "two_pass", "NWG=128,SPLIT=8,VEC=4,WG=256", "f32.buffer.nchw");
  EXPECT_EQ(t.ok, 0);
  EXPECT_GT(t.inaccurate, 0);
}

TEST(Mutations, SoftmaxWithoutMaxSubtractionFailsOnLargeLogits) {
  Mutant<SoftmaxFamily> fam("exp(SM_SLICE(n, s, hw, scale) - m)", "exp(SM_SLICE(n, s, hw, scale))");
  Tally t = run(fam, "per_item", "WG=64", "f32.buffer.nchw");
  EXPECT_EQ(t.inaccurate, 1);  // only the problem with logits near 100 overflows
  EXPECT_GT(t.ok, 0);
}

TEST(Mutations, GegluWithHiddenAndGateSwapped) {
  Mutant<ActivationFamily> fam("out = hidden * act_gelu(gate);", "out = gate * act_gelu(hidden);");
  Tally t = run(fam, "slices", "ITEMS=1,WG=128", "f16.buffer.nc4hw4");
  EXPECT_EQ(t.inaccurate, 2);  // the two geglu problems, nothing else
  EXPECT_GT(t.ok, 0);
}

TEST(Mutations, AttentionRowStatisticsWithoutTheMaxFailOnLargeLogits) {
  // The row reduction sums exp(x) with max = 0: exp(90 + x) overflows to inf.
  Mutant<AttentionFamily> fam("return (float2)(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));",
                              "return (float2)(0.0f, a.y * exp(a.x) + b.y * exp(b.x));");
  for (const char* variant : {"naive", "partially_fused_softmax"}) {
    Tally t = run(fam, variant, "R=1,SWG=64,T=8", "f32.buffer.nchw");
    EXPECT_EQ(t.inaccurate, 1) << variant;  // only the +-90 mask problem
    EXPECT_EQ(t.ok, 3) << variant;
  }
}

TEST(Mutations, FlashWithoutTheRunningMaxFailsOnLargeLogits) {
  Mutant<AttentionFamily> fam("const float mnew = fmax(m[r], cmax[r]);", "const float mnew = 0.0f;");
  Tally t = run(fam, "flash", "BK=16,KC=8,RQ=1,WG=32", "f32.buffer.nc4hw4");
  EXPECT_EQ(t.inaccurate, 1);
  EXPECT_EQ(t.ok, 3);
}

TEST(Mutations, FlashForgettingToRescaleTheSum) {
  // The denominator keeps contributions of an old max: wrong wherever a later key tile
  // raises a row's max, i.e. on every problem.
  Mutant<AttentionFamily> fam("den[r] *= corr;", ";");
  Tally t = run(fam, "flash", "BK=16,KC=8,RQ=1,WG=32", "f32.buffer.nchw");
  EXPECT_EQ(t.ok, 0);
}

TEST(Mutations, AttentionCausalMaskOffByOne) {
  Mutant<AttentionFamily> fam("if (causal && l > s) x = -INFINITY;", "if (causal && l >= s) x = -INFINITY;");
  Tally t = run(fam, "partially_fused_softmax", "R=2,SWG=64,T=8", "f32.buffer.nchw");
  EXPECT_EQ(t.inaccurate, 1);  // the causal problem only
  EXPECT_EQ(t.ok, 3);
}

TEST(Mutations, ConcatWithBsChannelsOffByOne) {
  // Output channel c >= C1 reads b's channel c - C1 + 1. Run in NC4HW4, where the one
  // channel past b's last is a (zero) padding lane, not memory past the buffer: every
  // check problem with C1 % 4 != 0 has C2 % 4 != 0.
  Mutant<ConcatFamily> fam("c - a_C", "c - a_C + 1");
  Tally t = run(fam, "slices", "ITEMS=1,WG=128", "f32.buffer.nc4hw4");
  EXPECT_EQ(t.inaccurate, 2);  // the problems with odd C1, gathered lane by lane
  EXPECT_EQ(t.ok, 2);          // C1 % 4 == 0 reads whole slices of b: unaffected
}

TEST(Mutations, BinaryBroadcastingEveryB) {
  // Every position reads b's first one, as if b were always [N, C, 1, 1].
  Mutant<BinaryFamily> fam("b_LOAD4(n, s, hw * bstep)", "b_LOAD4(n, s, 0)");
  Tally t = run(fam, "slices", "ITEMS=4,WG=64", "f16.image2d.nc4hw4");
  EXPECT_EQ(t.inaccurate, 2);  // the two problems without broadcast
  EXPECT_EQ(t.ok, 3);
}

TEST(Mutations, TimestepIgnoringFreqShift) {
  Mutant<TimestepFamily> fam("((float)nh - shift)", "((float)nh)");
  Tally t = run(fam, "per_slice", "WG=64", "f32.buffer.nchw");
  EXPECT_EQ(t.inaccurate, 2);  // freq_shift 1 and 0.5
  EXPECT_EQ(t.ok, 1);          // SD 1.5's freq_shift 0
}

// Quick conv problems (ConvFamily::checkProblems): 0 odd 5->7, 1 +temb (batch 2),
// 2 +residual, 3 stride 2, 4 1x1, 5 4->3 without bias. Winograd skips 3 and 4.
TEST(Mutations, GemmInt4NibbleHalvesSwapped) {
  // Values 0-15 of a q4_0 block read from the high nibbles, 16-31 from the low ones: the
  // layout mistake gguf's byte order makes easy. Every check problem has K >= 17.
  Mutant<GemmFamily> fam("j < 16 ? (b & (uchar4)(15)) : (b >> (uchar4)(4))", "j >= 16 ? (b & (uchar4)(15)) : (b >> (uchar4)(4))");
  Tally t = run(fam, "direct", "WG=64", "f32.buffer.nchw.wint4");
  EXPECT_EQ(t.inaccurate, 9);
  EXPECT_EQ(t.ok, 0);
}

TEST(Mutations, GemmInt8ValuesOfTheWrongLane) {
  // Each group of 4 int8 values read from its neighbour group in the block.
  Mutant<GemmFamily> fam("(__global const char*)blk + 2 + j)", "(__global const char*)blk + 2 + (j ^ 4))");
  Tally t = run(fam, "tiled", "", "f16.buffer.nc4hw4.wint8");
  EXPECT_EQ(t.inaccurate, 9);
  EXPECT_EQ(t.ok, 0);
}

TEST(Mutations, ConvDirectPaddingOffByOne) {
  // Column W (one past the right edge) read instead of zero padding.
  Mutant<ConvFamily> fam("(rowIn && ix >= 0 && ix < W)", "(rowIn && ix >= 0 && ix <= W)");
  Tally t = run(fam, "direct", "CB=2,CO=8,PX=2,WGX=16,WGY=4", "f32.buffer.nchw");
  EXPECT_EQ(t.inaccurate, 5);  // every 3x3 problem
  EXPECT_EQ(t.ok, 1);          // the 1x1 has no padding
}

TEST(Mutations, ConvIm2colPaddingOffByOne) {
  // The bottom row taken for padding (zeros) instead of data. (Reading row -1 instead,
  // the mirror mistake, is not a deterministic mutant: with a single channel slice and
  // batch 1 that row lies before the buffer, and memory that happens to hold zeros there
  // passes as correct padding.) Every problem reads its input's last row, the 1x1 too.
  Mutant<ConvFamily> fam("iy >= 0 && iy < H && ix >= 0", "iy >= 0 && iy < H - 1 && ix >= 0");
  Tally t = run(fam, "im2col_gemm", "KT=16,RM=8,RN=4,TM=64,TN=64", "f32.buffer.nc4hw4");
  EXPECT_EQ(t.inaccurate, 6);
  EXPECT_EQ(t.ok, 0);
}

TEST(Mutations, WinogradWithAWrongTransformEntry) {
  // One entry of F(4x4,3x3)'s output transform A^T (-8 -> -7).
  Mutant<ConvFamily> f4("{0, 1, -1, 8, -8, 1}", "{0, 1, -1, 8, -7, 1}");
  Tally t = run(f4, "winograd_f4x4_3x3", "KT=16,RM=8,RN=4,TM=64,TN=64", "f32.buffer.nchw");
  EXPECT_EQ(t.inaccurate, 4);
  EXPECT_EQ(t.ok, 0);
  // One entry of F(6x6,3x3)'s weight transform G (1/180 -> 1/170, 6% off): caught
  // even under F6's looser tolerance.
  Mutant<ConvFamily> f6("{1.0f / 45, -1.0f / 90, 1.0f / 180}", "{1.0f / 45, -1.0f / 90, 1.0f / 170}");
  t = run(f6, "winograd_f6x6_3x3", "KT=16,RM=8,RN=4,TM=64,TN=64", "f32.buffer.nchw");
  EXPECT_EQ(t.inaccurate, 4);
}

TEST(Mutations, ConvTimeEmbeddingOfTheWrongBatch) {
  Mutant<ConvFamily> fam("v += temb_LOAD4(n, s, 0)", "v += temb_LOAD4(0, s, 0)");
  Tally t = run(fam, "winograd_f2x2_3x3", "KT=16,RM=8,RN=4,TM=64,TN=64", "f16.buffer.nchw");
  EXPECT_EQ(t.inaccurate, 1);  // the batch-2 temb problem only
  EXPECT_EQ(t.ok, 3);
}

TEST(Mutations, GemmKLoopDroppingTheTail) {
  // Whole KWG steps only: wrong wherever K % KWG != 0 (K = 37, 100, 19, 24, 40, 37, 40
  // with KWG = 16), right where K is a multiple (64, 48).
  Mutant<GemmFamily> fam("for (int k0 = 0; k0 < K; k0 += KWG)", "for (int k0 = 0; k0 + KWG <= K; k0 += KWG)");
  Tally t = run(fam, "tiled", "KWG=16,MWG=32,MWI=4,NWG=64,NWI=4,SB=1,VEC=4", "f32.buffer.nchw");
  EXPECT_EQ(t.inaccurate, 7);
  EXPECT_EQ(t.ok, 2);
}

TEST(Mutations, GemmGegluWithHiddenAndGateSwapped) {
  Mutant<GemmFamily> fam("float4 out = h * gemm_gelu(g);", "float4 out = g * gemm_gelu(h);");
  for (const char* variant : {"tiled", "direct"}) {
    Tally t = run(fam, variant, "", "f16.buffer.nc4hw4");
    EXPECT_EQ(t.inaccurate, 2) << variant;  // the two geglu problems only
    EXPECT_EQ(t.ok, 7) << variant;
  }
}

TEST(Mutations, GemmGemvReductionStoppingOneFoldEarly) {
  // The work-group's tree skips its last fold: work-item 1's half of every partial sum is
  // lost, wrong on each problem gemv serves (2x37x1x1, 3x40x1x2); the other seven have
  // more than 8 positions and are refused.
  Mutant<GemmFamily> fam("for (int n = WG / 2; n > 0; n >>= 1)", "for (int n = WG / 2; n > 1; n >>= 1)");
  Tally t = run(fam, "gemv", "WG=32", "f32.buffer.nc4hw4");
  EXPECT_EQ(t.inaccurate, 2);
  EXPECT_EQ(t.ok, 0);
}

TEST(Mutations, GemmGateTakingTheHiddenBias) {
  Mutant<GemmFamily> fam("g += gemm_bias4(bias_ARGS, F + c, valid);", "g += gemm_bias4(bias_ARGS, c, valid);");
  Tally t = run(fam, "tiled", "KWG=8,MWG=64,MWI=8,NWG=32,NWI=4,PF=0,SB=0,VEC=1", "f32.image2d.nc4hw4");
  EXPECT_EQ(t.inaccurate, 2);  // the two geglu problems
  EXPECT_EQ(t.ok, 7);
}

TEST(Mutations, AMutationThatDoesNotApplyIsAnError) {
  Mutant<LayerNormFamily> fam("no such text", "x");
  const VariantDef& v = fam.variant("per_item");
  CheckResult r = checkCase(ctx(), fam, v, v.defaults(), *fam.checkProblems(false).front(), StorageFormat{}, 1);
  EXPECT_EQ(r.status, Status::BuildFailed);
  EXPECT_NE(r.message.find("did not apply"), std::string::npos);
}

}  // namespace
}  // namespace sdspeed
