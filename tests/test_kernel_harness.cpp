// The one kernel harness (after ggml's test-backend-ops): every family x variant x
// sampled parameter point x storage format (x weight format, f32 and f16, for every
// family that reads weights; int8 and int4 for GEMM and conv), on the default OpenCL device (PoCL in
// CI), over the family's quick problem set. Each case runs tuning/check.h's
// checkCase: fresh random inputs, output poisoned with NaN, canary past the end,
// compared with the double-precision Eigen reference at the family's tolerance.
#include <gtest/gtest.h>

#include <iostream>

#include "test_support.h"  // first: a private PoCL cache folder for this process
#include "fake_vulkan_caps.h"

#include "kernels/conv/conv_family.h"
#include "kernels/groupnorm/groupnorm_family.h"
#include "kernels/registry.h"
#include "tuning/check.h"

namespace sdspeed {
namespace {

struct Case {
  const Family* family;
  const VariantDef* variant;
  ParamPoint point;
  int pointIndex;
  StorageFormat format;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.family->name() << "." << c.variant->name << " [" << c.point.text() << "] " << c.format.name();
}

const DeviceInfo& testDevice() {
  static const DeviceInfo dev = selectDevice(listDevices(), "");
  return dev;
}

Context& testContext() {
  static Context ctx(testDevice(), ContextOptions{});
  return ctx;
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  for (const auto& fam : allFamilies())
    for (const auto& v : fam->variants()) {
      // Defaults plus one more point; the seed is fixed so CI runs the same cases.
      const auto points = samplePoints(v, testDevice(), 1, 7);
      // A half variant (kernels/common/half_variant.h) in its own arithmetic: only on a
      // device with cl_khr_fp16 (samplePoints gives it no point on PoCL, which lacks it).
      const DType arith = v.arithmetic.front();
      for (size_t i = 0; i < points.size(); ++i)
        for (const auto& base : StorageFormat::all()) {
          const StorageFormat f = base.withArithmetic(arith);
          cases.push_back({fam.get(), &v, points[i], static_cast<int>(i), f});
          // f16 weights in every activation format: the weight slots stay NCHW buffers,
          // but the kernels around them (conv's weight pack and Winograd transform,
          // GEMM's float4 weight path) differ per format. A family reading no weights
          // would run the f32 program again (Family::keyFormat).
          if (fam->readsWeights())
            cases.push_back({fam.get(), &v, points[i], static_cast<int>(i), f.withWeights(DType::F16)});
          // int8/int4 weights (q8_0/q4_0 blocks) where the family has a quantized path
          // (GEMM, conv): every variant and point, in two activation formats (f32 NCHW, f16
          // NC4HW4): the weight read is the same code in all of them, so the other four
          // would add PoCL builds, not coverage.
          // Convolutions (six variants, PoCL's slowest builds) in f32 NCHW only.
          if (fam->readsQuantizedWeights() &&
              (f == StorageFormat{} ||
               (fam->name() == "gemm" && f == StorageFormat{DType::F16, Storage::Buffer, Layout::NC4HW4})))
            for (DType q : {DType::Q8_0, DType::Q4_0})
              cases.push_back({fam.get(), &v, points[i], static_cast<int>(i), f.withWeights(q)});
        }
    }
  return cases;
}

class KernelHarness : public ::testing::TestWithParam<Case> {};

TEST_P(KernelHarness, MatchesReference) {
  const Case& c = GetParam();
  int ran = 0;
  uint64_t seed = 2024;
  std::string refused;  // problems the variant declares it cannot run: said, not passed
  for (const auto& prob : c.family->checkProblems(false)) {
    CheckResult r = checkCase(testContext(), *c.family, *c.variant, c.point, *prob, c.format, ++seed);
    SCOPED_TRACE(r.problem + " [" + r.params + "] " + r.storage);
    if (r.status == Status::Unsupported) {
      refused += "\n  unsupported: " + r.problem + ": " + r.message;
      continue;
    }
    EXPECT_TRUE(r.passed()) << statusName(r.status) << ": " << r.message;
    if (r.status == Status::Ok) {
      ++ran;
      EXPECT_TRUE(r.canaryIntact);
      EXPECT_EQ(r.badPadding, 0u);
      // f16 weights: the error against the unrounded weights is measured too.
      if (c.format.weights == DType::F16) EXPECT_GE(r.relL2VsUnrounded, 0.0);
      else if (isQuantized(c.format.weights))
        // Quantization measurably changes the output (so the weights really were blocks,
        // and the gate above ran on the dequantized values): int8 ~0.5%, int4 ~8% here.
        EXPECT_GT(r.relL2VsUnrounded, c.format.weights == DType::Q8_0 ? 5e-4 : 1e-2);
      else EXPECT_LT(r.relL2VsUnrounded, 0.0);
    }
  }
  if (ran == 0) GTEST_SKIP() << c.variant->name << " supports no problem in " << c.format.name() << " here" << refused;
  if (!refused.empty()) std::cout << "[   NOTE   ] " << c.variant->name << " [" << c.point.text() << "] " << c.format.name() << refused << "\n";
}

// Guards the harness against passing by skipping: every variant runs (status ok) on
// at least one check problem in plain f32 buffers (in its own arithmetic) at a point
// this device supports. A variant needing an extension the device lacks (the f16
// variants on PoCL: cl_khr_fp16) cannot, and is named in a NOTE line, not passed
// silently; tests/test_cl_half_compile.cpp compiles those.
TEST(KernelHarnessCoverage, EveryVariantRunsSomewhere) {
  std::string lacked;
  for (const auto& fam : allFamilies())
    for (const auto& v : fam->variants()) {
      const StorageFormat f32 = StorageFormat{}.withArithmetic(v.arithmetic.front());
      const std::string why = v.deviceLimitReason(v.defaults(), testDevice());
      if (why.rfind("device lacks ", 0) == 0) {
        lacked += " " + fam->name() + "." + v.name + " (" + why + ")";
        continue;
      }
      const auto points = samplePoints(v, testDevice(), 1, 7);
      ASSERT_FALSE(points.empty()) << fam->name() << "." << v.name << " has no point this device can run";
      int ok = 0;
      for (const auto& prob : fam->checkProblems(false))
        ok += checkCase(testContext(), *fam, v, points.front(), *prob, f32, 11).status == Status::Ok;
      EXPECT_GT(ok, 0) << fam->name() << "." << v.name << " ran no problem";
    }
  if (!lacked.empty()) std::cout << "[   NOTE   ] not run on this device:" << lacked << "\n";
}

// split's multi-work-group chunking (SPLIT > 1) needs co-resident work-groups, so
// CI's PoCL cannot run it as is. Built with GN_NO_WAIT and launched twice by
// checkCase, the second launch reads the partial sums the first one published: the
// result is exact only if every chunk covers its share and the sums combine right.
TEST(GroupNormSplit, ChunksCombineWithoutWaiting) {
  GroupNormFamily fam;
  VariantDef v = fam.variant("split");
  v.defines["GN_NO_WAIT"] = 1;
  v.deviceRule = nullptr;
  for (const char* params : {"CACHE=0,SPLIT=4,VEC=4,WG=128", "CACHE=2,SPLIT=3,VEC=2,WG=128", "CACHE=0,SPLIT=8,VEC=1,WG=128"}) {
    const ParamPoint p = v.parsePoint(params);
    for (const auto& f : {StorageFormat{}, StorageFormat::parse("f16.buffer.nc4hw4")})
      for (const auto& prob : fam.checkProblems(false)) {
        CheckResult r = checkCase(testContext(), fam, v, p, *prob, f, 5);
        EXPECT_EQ(r.status, Status::Ok) << params << " " << f.name() << " " << r.problem << ": " << r.message;
      }
  }
}

// Per-call derived weights are made per block of output channels, the GEMM run per block
// within one enqueue (ConvFamily::perCallBlock). PER_CALL_CO=64 on Cout 150 (CoutP 152)
// makes blocks 64 + 64 + 24: several, the last partial and below the GEMM's tile TM;
// Winograd also runs per block of 4 tiles (PER_CALL_TILES; 60 tiles at F(2x2), 18 at
// F(4x4): a last block of 2, 8 at F(6x6)). Every
// GEMM-based variant, f32 and int8 weights, 3x3 (+ temb, residual) and 1x1 (+ residual):
// checked against the Eigen reference, and bit-identical to the resident derived weights
// (one block of all channels), as each output element sees the same arithmetic.
TEST(ConvPerCallBlocks, SeveralBlocksMatchReferenceAndResident) {
  const ConvFamily fam;
  const std::vector<ProblemPtr> problems = {ConvFamily::problem({2, 12, 9, 11}, 150, 3, 1, true, true, true),
                                            ConvFamily::problem({2, 7, 6, 5}, 150, 1, 1, true, false, true)};
  int blocked = 0;
  for (const auto& base : fam.variants()) {
    if (base.name == "direct") continue;  // derives no weights
    VariantDef v = base;
    v.defines["PER_CALL_CO"] = 64;
    v.defines["PER_CALL_TILES"] = 4;
    const ParamPoint pt = v.defaults();
    for (const StorageFormat f : {StorageFormat{}, StorageFormat{}.withWeights(DType::Q8_0)})
      for (const auto& prob : problems) {
        const CheckResult resident = checkCase(testContext(), fam, v, pt, *prob, f, 77);
        if (resident.status == Status::Unsupported) continue;  // Winograd on the 1x1, conv1x1 on the 3x3
        const CheckResult perCall = checkCase(testContext(), fam, v, pt, *prob, f, 77, /*derivedWeightsPerCall=*/true);
        SCOPED_TRACE(v.name + " " + f.name() + " " + prob->text());
        ASSERT_EQ(resident.status, Status::Ok) << resident.message;
        ASSERT_EQ(perCall.status, Status::Ok) << perCall.message;
        EXPECT_EQ(perCall.outputHash, resident.outputHash) << "per-call blocks differ from resident weights in bits";
        // The per-call regions hold one block: 64 of the 152 channels' derived weights
        // (and, Winograd, 4 tiles' planes).
        const ConvScratch s = ConvFamily::scratch(v, dynamic_cast<const ConvProblem&>(*prob), pt);
        EXPECT_EQ(s.blockChannels, 64);
        EXPECT_EQ(perCall.scratchBytes, s.inputBlock + s.outputBlock + s.weightsBlock);
        EXPECT_EQ(s.weightsBlock * 152, s.weights * 64);
        if (ConvFamily::winogradTile(v)) {
          EXPECT_EQ(s.blockTiles, 4);
          EXPECT_LT(s.inputBlock, s.input);
        }
        ++blocked;
      }
  }
  // im2col runs both problems, conv1x1 the 1x1, each Winograd the 3x3; in 2 weight formats.
  EXPECT_EQ(blocked, 2 * (2 + 1 + 3));
}

// The rule without an override, on SD 1.5's largest convolution (UNet up block, 2560 ->
// 1280 at 8x8 latents, batch 2, Winograd F(2x2)): 160 KiB of derived weights per output
// channel, so 16 MiB holds 102 channels, 64 in whole TM-64 tiles: 10 MiB per call instead
// of 200 MiB. Never below TM (a block of TM = 128 is 20 MiB), never above CoutP.
TEST(ConvPerCallBlocks, RuleOnSd15LargestConvolution) {
  const ConvFamily fam;
  const VariantDef& v = fam.variant("winograd_f2x2_3x3");
  const auto prob = ConvFamily::problem({2, 2560, 8, 8}, 1280);
  const auto& p = dynamic_cast<const ConvProblem&>(*prob);
  ParamPoint pt = v.defaults();
  ASSERT_EQ(pt["TM"], 64);
  ConvScratch s = ConvFamily::scratch(v, p, pt);
  EXPECT_EQ(s.weights, 16ull * 2560 * 1280 * 4);  // 200 MiB
  EXPECT_EQ(s.blockChannels, 64);
  EXPECT_EQ(s.weightsBlock, 16ull * 2560 * 64 * 4);  // 10 MiB
  pt = v.parsePoint("KT=16,RM=8,RN=4,TM=128,TN=64");
  s = ConvFamily::scratch(v, p, pt);
  EXPECT_EQ(s.blockChannels, 128);
  EXPECT_EQ(s.blockTiles, 32);  // all 2 x 4 x 4 tiles: V, M whole
  const auto small = ConvFamily::problem({2, 320, 64, 64}, 320);  // 20 KiB a channel: all 320 fit
  EXPECT_EQ(ConvFamily::scratch(v, dynamic_cast<const ConvProblem&>(*small), pt).blockChannels, 320);
  // The largest per-call scratch after blocking the channels: 640 -> 640 at 64x64 latents,
  // 2048 tiles. Blocks of 384 channels (40 KiB each: 15 MiB) and 256 tiles (64 KiB of V
  // and M each: 16 MiB), 31 MiB per call instead of 175 MiB (V 80 + M 80 + 15).
  const auto up = ConvFamily::problem({2, 640, 64, 64}, 640);
  s = ConvFamily::scratch(v, dynamic_cast<const ConvProblem&>(*up), v.defaults());
  EXPECT_EQ(s.blockChannels, 384);
  EXPECT_EQ(s.blockTiles, 256);
  EXPECT_EQ(s.input + s.output, 160ull << 20);
  EXPECT_EQ(s.inputBlock + s.outputBlock + s.weightsBlock, 31ull << 20);
}

// conv coopmat_f16's split-K scratch (ConvFamily::scratch: what the memory planner is
// told, device-free): SD 1.5's 2x1280x8x8 -> 1280 3x3 at SK 8 holds 8 x 2 x 1280 x 64
// floats (5 MiB) of partial sums, Cout 70 is counted as 72 rows in either layout, the
// default SK = 1 has none; partials over the device's largest allocation are refused in
// one line. Cin % 8 == 0 runs tap-major: its derived f16 weight rows (Cout x Cin x 9
// halves, 28 MiB here) are the `weights` part at every SK; Cin 9 has none.
TEST(ConvCoopMatSplitK, ScratchDeclaredAndBounded) {
  const ConvFamily fam;
  const VariantDef& v = fam.variant(ConvFamily::kCoopMatVariant);
  const auto prob = ConvFamily::problem({2, 1280, 8, 8}, 1280);
  const auto& p = dynamic_cast<const ConvProblem&>(*prob);
  const size_t rows = 1280ull * 1280 * 9 * 2;
  EXPECT_EQ(ConvFamily::scratch(v, p, v.defaults()).output, 0u);
  EXPECT_EQ(ConvFamily::scratch(v, p, v.defaults()).weights, rows);
  const ParamPoint pt = v.parsePoint("SK=8");
  const ConvScratch s = ConvFamily::scratch(v, p, pt);
  EXPECT_EQ(s.output, 8ull * 2 * 1280 * 64 * 4);
  EXPECT_EQ(s.total(), s.output + rows);
  const auto odd = ConvFamily::problem({1, 9, 5, 6}, 70);
  const ConvScratch so = ConvFamily::scratch(v, dynamic_cast<const ConvProblem&>(*odd), pt);
  EXPECT_EQ(so.output, 8ull * 72 * 30 * 4);
  EXPECT_EQ(so.weights, 0u);
  const StorageFormat f = StorageFormat{DType::F16, Storage::Buffer, Layout::NC4HW4}.withArithmetic(DType::F16);
  DeviceCaps dev = testing_caps::h200();
  EXPECT_EQ(fam.unsupportedReason(v, pt, p, f, dev), "");
  // SD 1.5's 1280 -> 1280 at 32x32 (the upsample conv): SK 16 makes 160 MiB of partials,
  // over a 64 MiB allocation that the 56 MiB weight tensor fits; SK 4 (40 MiB) fits.
  const auto big = ConvFamily::problem({2, 1280, 32, 32}, 1280);
  const auto& bp = dynamic_cast<const ConvProblem&>(*big);
  dev.maxAllocBytes = uint64_t{64} << 20;
  EXPECT_EQ(fam.unsupportedReason(v, v.parsePoint("SK=16"), bp, f, dev),
            "split-K's 160 MiB of partial sums exceed the device's largest allocation (64 MiB)");
  EXPECT_EQ(fam.unsupportedReason(v, v.parsePoint("SK=4"), bp, f, dev), "");
  EXPECT_EQ(fam.unsupportedReason(v, v.defaults(), bp, f, dev), "");  // SK = 1: no scratch
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, KernelHarness, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           std::string s = c.family->name() + "_" + c.variant->name + "_p" +
                                           std::to_string(c.pointIndex) + "_" + c.format.name();
                           for (char& ch : s) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return s;
                         });

// A tuner builds points ahead in parallel (Family::prebuild); the timed run then prepares
// them. Prebuild must compile the very program prepare uses, or the build-ahead is
// wasted and the timed thread compiles again (GEMM built its accessors at the point's
// VEC while prepare used scalar ones). Programs with a define only the problem gives
// are built in prepare by design: GEGLU GEMMs, flash attention (its head size).
TEST(KernelHarnessCoverage, PrebuildCompilesWhatPrepareUses) {
  const StorageFormat f32{};
  for (const auto& fam : allFamilies())
    for (const auto& v : fam->variants()) {
      const auto points = samplePoints(v, testDevice(), 1, 7);
      if (points.empty() || (fam->name() == "attention" && v.name == "flash")) continue;
      for (const auto& prob : fam->checkProblems(false)) {
        if (prob->text().find("epilogue=geglu") != std::string::npos) continue;
        if (!fam->unsupportedReason(v, points.front(), *prob, f32, testDevice()).empty()) continue;
        prebuildOp(testContext(), *fam, v, points.front(), f32);
        // Builds and disk-cache loads: anything prepare fetches beyond the memory cache.
        auto fetched = [] {
          const auto st = testContext().programs().stats();
          return st.builds + st.diskHits;
        };
        const int before = fetched();
        try {
          prepareOp(testContext(), *fam, v, points.front(), *prob, f32);
        } catch (const Error&) {
          continue;  // a point this problem cannot run: nothing to compare
        }
        EXPECT_EQ(fetched(), before)
            << fam->name() << "." << v.name << " [" << points.front().text() << "] " << prob->text()
            << ": prepare compiled a program prebuild did not";
        break;  // one problem per variant
      }
    }
}

}  // namespace
}  // namespace sdspeed
