// The one kernel harness on the Vulkan backend (lavapipe in CI, under the Khronos
// validation layer): every family that has Vulkan kernels (kernels/vulkan/
// vulkan_lowering.cpp) x variant x sampled point x storage format the device holds x the
// weight format (f32; f16 where the family reads weights, int8/int4 where it has a
// quantized path: those in two activation formats, allCases says why) x the
// arithmetic the variant computes in (f32, or f16 for the half twins), over
// the family's quick problems, through the same checkCase as OpenCL (fresh random inputs,
// poisoned output, canary, Eigen reference at the family's tolerance). Families without
// Vulkan kernels must come back Unsupported, saying so, never as a pass. Any validation
// error fails the test that caused it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <random>
#include <iostream>

#include "kernels/attention/attention_family.h"
#include "kernels/conv/conv_family.h"
#include "kernels/common/half_variant.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/groupnorm/groupnorm_family.h"
#include "kernels/lowering.h"
#include "kernels/registry.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/timing.h"
#include "runtime/vulkan/backend.h"
#include "runtime/vulkan/instance.h"
#include "vulkan_test_backend.h"
#include "tuning/check.h"

namespace sdspeed {
namespace {

vk::VulkanBackend* testBackend() { return vulkanTestBackend(); }

// Why conv coopmat_f16's emulated module cannot run on be (empty: it can).
std::string convCoopMatEmulationGap(vk::VulkanBackend* be) {
  if (!be) return "no Vulkan driver installed";
  if (!be->caps().fp16) return "device lacks shaderFloat16";
  if (!findVulkanModules("conv_coopmat_emu")) return "this glslc made no float16_t modules";
  return {};
}

// conv coopmat_f16 with its four coopmat operations in scalar code (COOPMAT_EMULATE), so a
// device without cooperative matrices (lavapipe) runs the rest of the shader.
VariantDef emulatedConvCoopMat() {
  VariantDef v = findFamily("conv").variant("coopmat_f16");
  v.defines["COOPMAT_EMULATE"] = 1;
  v.deviceRule = nullptr;  // no cooperative matrices needed
  return v;
}

struct Case {
  const Family* family;
  const VariantDef* variant;
  ParamPoint point;
  StorageFormat format;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.family->name() << "." << c.variant->name << " [" << c.point.text() << "] " << c.format.name();
}

// Cases need the device's limits (sampled points), so the list is made from lavapipe's
// capability record when there is a device, else from none (then the test skips).
std::vector<Case> allCases() {
  std::vector<Case> cases;
  vk::VulkanBackend* be = testBackend();
  if (!be) return cases;
  for (const auto& fam : allFamilies()) {
    if (!findVulkanLowering(fam->name())) continue;
    for (const auto& v : fam->variants()) {
      const auto points = samplePoints(v, be->caps(), 1, 7);
      for (const auto& p : points)
        for (const auto& f : StorageFormat::all())
          // Each arithmetic the variant computes in: the half twins (slices_f16, ...) run
          // their float16_t modules (lavapipe has shaderFloat16).
          for (DType a : v.arithmetic) {
            if (f.storage != Storage::Buffer) continue;
            const bool twoFormats = f == StorageFormat{} || f == StorageFormat{DType::F16, Storage::Buffer, Layout::NC4HW4};
            // A half twin of a variant that runs here too (tiled_f16, flash_f16, ...) runs
            // f32 NCHW and f16 NC4HW4 only: both storage types through its afp modules,
            // both layouts, while the layouts' indexing (sd_index) is the f32 twin's code,
            // run in all four formats. CI time: lavapipe builds a pipeline per case.
            if (computesInHalf(v) && baseVariantName(v) != v.name && !twoFormats) continue;
            cases.push_back({fam.get(), &v, p, f.withArithmetic(a)});
            // The other weight formats (kernels/common/weights.glsl), sampled: every variant
            // and point, in f32 NCHW and f16 NC4HW4 only. On Vulkan the weight decode is
            // the same code whatever the activation format (no per-format weight packing
            // or transform, unlike OpenCL), and each weight format is one more lavapipe
            // pipeline build per case: all four activation formats would double this
            // harness's time for no other code. f16 where the family reads weights (a
            // family reading none would run f32 weights again: Family::keyFormat); int8 /
            // int4 (q8_0/q4_0 blocks) where it has a quantized path (GEMM, conv).
            if (!twoFormats) continue;
            if (fam->readsWeights()) cases.push_back({fam.get(), &v, p, f.withArithmetic(a).withWeights(DType::F16)});
            if (fam->readsQuantizedWeights())
              for (DType q : {DType::Q8_0, DType::Q4_0})
                cases.push_back({fam.get(), &v, p, f.withArithmetic(a).withWeights(q)});
          }
    }
  }
  return cases;
}

class VulkanHarness : public ::testing::TestWithParam<Case> {};

TEST_P(VulkanHarness, MatchesReference) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed (mesa-vulkan-drivers provides lavapipe)";
  const Case& c = GetParam();
  const int errorsBefore = be->instance().validationErrors();
  int ran = 0;
  uint64_t seed = 2024;
  for (const auto& prob : c.family->checkProblems(false)) {
    CheckResult r = checkCase(*be, *c.family, *c.variant, c.point, *prob, c.format, ++seed);
    SCOPED_TRACE(r.problem + " [" + r.params + "] " + r.storage);
    if (r.status == Status::Unsupported) {
      std::cout << "[   NOTE   ] unsupported: " << r.problem << ": " << r.message << "\n";
      continue;
    }
    EXPECT_EQ(r.status, Status::Ok) << statusName(r.status) << ": " << r.message;
    EXPECT_TRUE(r.canaryIntact);
    EXPECT_EQ(r.badPadding, 0u);
    if (r.status == Status::Ok) {
      // As in the OpenCL harness: f16 weights measure the error against the unrounded
      // weights; quantization measurably changes the output (so the weights really were
      // blocks, and the gate above ran on the dequantized values).
      if (c.format.weights == DType::F16) EXPECT_GE(r.relL2VsUnrounded, 0.0);
      else if (isQuantized(c.format.weights))
        EXPECT_GT(r.relL2VsUnrounded, c.format.weights == DType::Q8_0 ? 5e-4 : 1e-2);
      else EXPECT_LT(r.relL2VsUnrounded, 0.0);
    }
    ran += r.status == Status::Ok;
  }
  EXPECT_EQ(be->instance().validationErrors(), errorsBefore) << be->instance().lastValidationError();
  if (ran == 0) GTEST_SKIP() << c.variant->name << " supports no problem in " << c.format.name() << " here";
}

INSTANTIATE_TEST_SUITE_P(All, VulkanHarness, ::testing::ValuesIn(allCases()));
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(VulkanHarness);

// A family with no Vulkan kernels is refused visibly, never passed or run on another API.
TEST(VulkanHarnessCoverage, FamiliesWithoutKernelsAreUnsupported) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  int lowered = 0, refused = 0;
  for (const auto& fam : allFamilies()) {
    const auto prob = fam->checkProblems(false).front();
    if (findVulkanLowering(fam->name())) {
      // Some variant runs; one without Vulkan kernels (groupnorm's split) says so.
      ++lowered;
      int ok = 0;
      for (const auto& v : fam->variants()) {
        CheckResult r = checkCase(*be, *fam, v, v.defaults(), *prob, StorageFormat{}, 3);
        ok += r.status == Status::Ok;
        if (r.status != Status::Ok) {
          // Unsupported, for lack of Vulkan kernels or for a device rule (split's SPLIT > 1).
          EXPECT_EQ(r.status, Status::Unsupported) << fam->name() << "." << v.name << ": " << r.message;
          if (r.message.find("has no vulkan kernels") != std::string::npos) {
            EXPECT_EQ(lackedCapability(r.message).rfind(fam->name() + " " + v.name + " has no vulkan kernels", 0), 0u)
                << r.message;
          }
        }
      }
      EXPECT_GT(ok, 0) << fam->name();
    } else {
      ++refused;
      const VariantDef& v = fam->variants().front();
      CheckResult r = checkCase(*be, *fam, v, v.defaults(), *prob, StorageFormat{}, 3);
      EXPECT_EQ(r.status, Status::Unsupported) << fam->name();
      EXPECT_NE(r.message.find("has no vulkan kernels"), std::string::npos) << r.message;
      EXPECT_EQ(lackedCapability(r.message), "family " + fam->name() + " has no vulkan kernels");
    }
  }
  EXPECT_GT(lowered, 0);
  std::cout << "[   NOTE   ] " << lowered << " families have Vulkan kernels, " << refused << " do not yet\n";
}

// Guards the harness against passing by skipping: every variant a family lowers onto
// Vulkan runs (status ok) in f32 and f16 storage, NCHW and NC4HW4, in each arithmetic it
// computes in, at a point this device supports. A lowering that wrongly refused a format
// would otherwise only skip.
TEST(VulkanHarnessCoverage, EveryLoweredVariantRunsInEveryBufferFormat) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  int checked = 0;
  for (const auto& fam : allFamilies()) {
    if (!findVulkanLowering(fam->name())) continue;
    for (const auto& v : fam->variants()) {
      const auto points = samplePoints(v, be->caps(), 0, 7);
      if (points.empty()) continue;  // the device rules refuse every point (said by check)
      // The first quick problem the family's rules let the variant run (conv1x1: 1x1 only).
      ProblemPtr prob;
      for (const auto& q : fam->checkProblems(false))
        if (!prob && fam->unsupportedReason(v, points.front(), *q, StorageFormat{}.withArithmetic(v.arithmetic.front()),
                                             be->caps()).empty()) prob = q;
      if (!prob) {
        ADD_FAILURE() << fam->name() << "." << v.name << " runs none of its family's quick problems";
        continue;
      }
      for (const char* text : {"f32.buffer.nchw", "f32.buffer.nc4hw4", "f16.buffer.nchw", "f16.buffer.nc4hw4"})
        for (DType a : v.arithmetic) {
          const StorageFormat f = StorageFormat::parse(text).withArithmetic(a);
          if (f.dtype == DType::F16 && !be->caps().storage16) continue;
          CheckResult r = checkCase(*be, *fam, v, points.front(), *prob, f, 5);
          if (r.status == Status::Unsupported && r.message.find("has no vulkan kernels") != std::string::npos) continue;
          ++checked;
          EXPECT_EQ(r.status, Status::Ok) << fam->name() << "." << v.name << " " << f.name() << ": " << r.message;
        }
    }
  }
  EXPECT_GT(checked, 40);
}

// groupnorm two_pass on Vulkan (groupnorm_two_pass.comp): every SPLIT value (1 to 64: a
// group's elements split into ranges down to a few each, some empty past the group's end)
// on the quick problems (odd HW, C % 4 == 2 with NC4HW4 pad channels, SiLU and residual,
// a mean of 1000), through checkCase against the reference; the half twin at one split;
// the op's scratch is the declared partials (N x G x SPLIT x 2 floats) and its events are
// both dispatches'. A lost partial or a wrong group index is an O(1) error.
TEST(VulkanHarnessCoverage, GroupNormTwoPassRunsEverySplit) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  const int errorsBefore = be->instance().validationErrors();
  const Family& fam = findFamily("groupnorm");
  const VariantDef& v = fam.variant("two_pass");
  int ran = 0;
  for (int split : v.param("SPLIT")->values) {
    std::map<std::string, int> values = v.defaults().values();
    values["SPLIT"] = split;
    const ParamPoint pt(values);
    for (const auto& prob : fam.checkProblems(false)) {
      const StorageFormat f = StorageFormat::parse(split == 64 ? "f16.buffer.nc4hw4" : "f32.buffer.nc4hw4");
      const CheckResult r = checkCase(*be, fam, v, pt, *prob, f, 13);
      EXPECT_EQ(r.status, Status::Ok) << pt.text() << " " << r.problem << ": " << r.message;
      EXPECT_EQ(r.badPadding, 0u);
      const auto& g = dynamic_cast<const GroupNormProblem&>(*prob);
      EXPECT_EQ(r.scratchBytes, static_cast<uint64_t>(g.dims.n * g.attrs.groups * split * 2 * 4)) << r.problem;
      ran += r.status == Status::Ok;
    }
  }
  EXPECT_EQ(ran, 7 * static_cast<int>(fam.checkProblems(false).size()));
  const VariantDef& h = fam.variant("two_pass_f16");
  const StorageFormat fh = StorageFormat::parse("f16.buffer.nc4hw4").withArithmetic(DType::F16);
  for (const auto& prob : fam.checkProblems(false)) {
    const CheckResult r = checkCase(*be, fam, h, v.parsePoint("SPLIT=4"), *prob, fh, 17);
    EXPECT_EQ(r.status, Status::Ok) << r.problem << ": " << r.message;
  }
  // SDSPEED_VK_GN_PER_ELEMENT=1 (the device script's A/B switch): NC4HW4 per element
  // again, not in slices (QUADS = 0), f32 and f16 arithmetic.
  setenv("SDSPEED_VK_GN_PER_ELEMENT", "1", 1);
  for (const auto& prob : fam.checkProblems(false)) {
    const CheckResult r = checkCase(*be, fam, v, v.defaults(), *prob, StorageFormat::parse("f32.buffer.nc4hw4"), 19);
    EXPECT_EQ(r.status, Status::Ok) << r.problem << ": " << r.message;
    EXPECT_EQ(r.badPadding, 0u);
    const CheckResult rh = checkCase(*be, fam, h, v.defaults(), *prob, fh, 23);
    EXPECT_EQ(rh.status, Status::Ok) << rh.problem << ": " << rh.message;
  }
  unsetenv("SDSPEED_VK_GN_PER_ELEMENT");
  const auto prob = fam.checkProblems(false).front();
  auto op = prepareOp(*be, fam, v, v.defaults(), *prob, StorageFormat{});
  OpTensors t = OpTensors::create(*be, fam, *prob, StorageFormat{}, false);
  std::mt19937_64 rng(3);
  t.upload(fam.makeInputs(*prob, rng));
  EXPECT_EQ(op->enqueue(t.args()).size(), 2u);
  be->finish();
  EXPECT_EQ(be->instance().validationErrors(), errorsBefore) << be->instance().lastValidationError();
}

// attention flash's sampled point above may be a NATIVE=1 one, which Vulkan refuses (GLSL
// has one exp2), leaving RQ, KC and BK values unrun: each other value of each parameter
// here, at the defaults otherwise, on the quick problems of head sizes 8 and 4 (tile ends
// and causal included; the D = 40 mask problem runs at the defaults above, and its
// 10-slice register arrays make each of lavapipe's pipelines slow to build).
TEST(VulkanHarnessCoverage, AttentionFlashRunsEveryParameterValue) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  const Family& fam = findFamily("attention");
  const VariantDef& v = fam.variant("flash");
  int ran = 0;
  for (const auto& param : v.params)
    for (int value : param.values) {
      if (param.name == "NATIVE" || value == param.values.front()) continue;
      std::map<std::string, int> values;
      for (const auto& q : v.params) values[q.name] = v.defaults()[q.name];
      values[param.name] = value;
      if (param.name == "BK") values["KC"] = std::min(values["KC"], value);  // BK % KC == 0
      const ParamPoint pt(values);
      for (const auto& prob : fam.checkProblems(false))
        for (const char* text : {"f32.buffer.nchw", "f16.buffer.nc4hw4"}) {
          if (static_cast<const AttentionProblem&>(*prob).headDim > 8) continue;
          CheckResult r = checkCase(*be, fam, v, pt, *prob, StorageFormat::parse(text), 11);
          EXPECT_EQ(r.status, Status::Ok) << pt.text() << " " << text << " " << r.problem << ": " << r.message;
          ++ran;
        }
    }
  EXPECT_EQ(ran, 36);  // 6 values x 3 problems x 2 formats
  std::map<std::string, int> native;
  for (const auto& q : v.params) native[q.name] = v.defaults()[q.name];
  native["NATIVE"] = 1;
  CheckResult r = checkCase(*be, fam, v, ParamPoint(native), *fam.checkProblems(false).front(), StorageFormat{}, 11);
  EXPECT_EQ(r.status, Status::Unsupported) << r.message;
}

// loweringGap asks the Vulkan lowering without building a pipeline: a point that lowers
// says "" and one that does not gives the lowering's own one-line message (flash NATIVE=1,
// a parameter-level gap; a family with no table entry), both with no pipeline built and
// none left behind. Preparing the point afterwards builds it as usual (described-only
// pipelines are never handed out for a real op, and cannot be dispatched).
TEST(VulkanHarnessCoverage, LoweringGapBuildsNoPipeline) {
  if (!testBackend()) GTEST_SKIP() << "no Vulkan driver installed";
  vk::VulkanBackend be("", "");  // a fresh one: nothing built yet
  const Family& fam = findFamily("attention");
  const VariantDef& flash = fam.variant("flash");
  const auto problems = fam.checkProblems(false);  // kept: prob refers into it
  const Problem& prob = *problems.front();
  const StorageFormat f32;
  EXPECT_EQ(loweringGap(be, fam, flash, flash.defaults(), prob, f32), "");
  std::map<std::string, int> native;
  for (const auto& q : flash.params) native[q.name] = flash.defaults()[q.name];
  native["NATIVE"] = 1;
  EXPECT_NE(loweringGap(be, fam, flash, ParamPoint(native), prob, f32).find("NATIVE=1 has no Vulkan counterpart"),
            std::string::npos);
  for (const auto& other : allFamilies())
    if (!findVulkanLowering(other->name())) {
      const VariantDef& v = other->variants().front();
      EXPECT_EQ(loweringGap(be, *other, v, v.defaults(), *other->checkProblems(false).front(), f32),
                "family " + other->name() + " has no vulkan kernels");
    }
  EXPECT_EQ(be.pipelinesBuilt(), 0u);
  const auto op = prepareOp(be, fam, flash, flash.defaults(), prob, f32);
  EXPECT_EQ(be.pipelinesBuilt(), 1u);
}

// Heads wider than D = 160 (the VAE's 512) run flash on Vulkan with each row split across
// invocations (attention_flash_wide.glsl); no quick problem has one, so here: D = 512 with
// a mask at large offsets, D = 384 causal, two rows per invocation, KC = 8 (lavapipe's
// 32 KiB of shared memory holds KC = 16 only up to D = 448). OpenCL's flash still refuses them.
TEST(VulkanHarnessCoverage, AttentionFlashWideHeads) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  const Family& fam = findFamily("attention");
  const VariantDef& v = fam.variant("flash");
  const std::vector<ProblemPtr> problems = {AttentionFamily::problem(1, 1, 512, 40, 45, false, true, 90.0f),
                                            AttentionFamily::problem(2, 1, 384, 37, 37, true)};
  std::map<std::string, int> values;
  for (const auto& q : v.params) values[q.name] = v.defaults()[q.name];
  values["KC"] = 8;
  for (int rq : {1, 2}) {
    values["RQ"] = rq;
    values["WG"] = rq == 1 ? 64 : 32;
    const ParamPoint pt(values);
    for (const auto& prob : problems)
      for (const char* text : {"f32.buffer.nchw", "f16.buffer.nc4hw4"}) {
        CheckResult r = checkCase(*be, fam, v, pt, *prob, StorageFormat::parse(text), 13);
        EXPECT_EQ(r.status, Status::Ok) << pt.text() << " " << text << " " << r.problem << ": " << r.message;
      }
  }
  DeviceCaps openCl = be->caps();
  openCl.api = "opencl";
  EXPECT_NE(fam.unsupportedReason(v, v.defaults(), *problems[0], StorageFormat{}, openCl), "");
}

// gemm coopmat_f16 (tensor cores, VK_NV_cooperative_matrix) on a device without
// cooperative matrices (lavapipe): refused by its device rule before any pipeline, with
// the reason `check` prints as its skipped line, whether sampled or forced (--params),
// and by the lowering itself; never run, never dropped. Its SPIR-V is built where this
// glslc compiles the NV extension (it cannot be created on lavapipe).
TEST(VulkanHarnessCoverage, GemmCoopMatRefusedWithoutCooperativeMatrices) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  if (be->caps().cooperativeMatrix) GTEST_SKIP() << "this device has cooperative matrices: the harness runs coopmat_f16";
  const Family& gemm = findFamily("gemm");
  const VariantDef& v = gemm.variant("coopmat_f16");
  EXPECT_EQ(v.deviceLimitReason(v.defaults(), be->caps()), "device lacks cooperative matrices");
  EXPECT_TRUE(samplePoints(v, be->caps(), 2, 7).empty());
  const auto prob = gemm.checkProblems(false).front();
  for (const char* text : {"f32.buffer.nchw", "f16.buffer.nc4hw4"}) {
    const StorageFormat f = StorageFormat::parse(text).withArithmetic(DType::F16);
    const CheckResult r = checkCase(*be, gemm, v, v.defaults(), *prob, f, 3);
    EXPECT_EQ(r.status, Status::Unsupported) << text << ": " << r.message;
    EXPECT_EQ(lackedCapability(r.message), "device lacks cooperative matrices") << r.message;
    EXPECT_THROW(prepareOp(*be, gemm, v, v.defaults(), *prob, f), UnsupportedError) << text;
  }
#if SDSPEED_GLSLC_NV_COOPERATIVE_MATRIX
  const VulkanModules* m = findVulkanModules("gemm_coopmat");
  ASSERT_NE(m, nullptr) << "glslc compiles GL_NV_cooperative_matrix but the build made no gemm_coopmat modules";
  EXPECT_NE((*m)[2], nullptr);  // f32 storage, f16 arithmetic
#else
  EXPECT_EQ(findVulkanModules("gemm_coopmat"), nullptr);
#endif
}

// What lavapipe can verify of coopmat_f16 before its first run on tensor cores: the same
// shader with the four coopmat operations done in scalar code by the same layouts
// (COOPMAT_EMULATE: gemm_coopmat.comp), through checkCase against the Eigen reference at
// coopmat_f16's tolerance. Points that together take every parameter value, each fitting
// lavapipe's 32 KiB of shared memory (GEGLU's doubled tiles where they fit), on the quick
// problems (M, N and K off every tile, several tiles and K steps, every epilogue); f32 and
// f16 storage, and every weight format at the defaults. Not verified here: the driver's
// coopmat instructions themselves (fragment layouts, alignment, the f32 accumulation).
TEST(VulkanHarnessCoverage, GemmCoopMatEmulatedMatchesReference) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  if (!be->caps().fp16) GTEST_SKIP() << "device lacks shaderFloat16";
  if (!findVulkanModules("gemm_coopmat_emu")) GTEST_SKIP() << "this glslc made no float16_t modules";
  const Family& gemm = findFamily("gemm");
  VariantDef v = gemm.variant("coopmat_f16");
  v.defines["COOPMAT_EMULATE"] = 1;
  v.deviceRule = nullptr;  // no cooperative matrices needed
  // Five points that together take every value of every parameter (lavapipe builds each
  // pipeline of this shader slowly: a point costs a pipeline per module, weight format and
  // GEGLU or not); the split-K ones (SK > 1: partial sums, then the reduce pass's epilogue)
  // with GEGLU too, and with more ranges than the quick problems have K steps (empty ranges).
  const std::vector<std::string> points = {
      "",                                             // defaults: 64 x 64 tiles, KS 32, double-buffered
      "CN=8,CK=8,WM=1,WN=4,SGM=4,SGN=1,KS=16,SK=2",   // 64 x 32, 8-deep; GEGLU fits, double-buffered
      "CN=8,WM=4,WN=1,SGM=1,SGN=4,KS=64,DB=0,SK=4",   // 64 x 32, 4 K-steps per stage, single buffer
      "KS=16,SK=8",                                   // 8 ranges of 16-deep steps, GEGLU fits
      "KS=16,DB=0,SK=16",                             // 16 ranges, single buffer
      // The epilogue's C tile in passes (it outgrows the staging tiles of one 16-deep stage):
      "KS=16,DB=0",                                   // 2 passes, both subgroup columns
      "WN=4,SGN=1,KS=16,DB=0",                        // 4 passes
  };
  std::set<std::string> values;  // every parameter value some point ran
  int ok = 0, refused = 0, gegluOk = 0;
  for (const std::string& text : points) {
    const ParamPoint pt = v.parsePoint(text);
    for (const auto& [name, value] : pt.values()) values.insert(name + "=" + std::to_string(value));
    // f32 and f16 storage in both layouts; at the defaults also f16, int8 and int4 weights.
    // The last two points one layout each (their tiles are the defaults').
    std::vector<StorageFormat> formats = {StorageFormat::parse("f32.buffer.nchw"),
                                          StorageFormat::parse("f16.buffer.nc4hw4")};
    if (text == points[3] || text == points[6]) formats.erase(formats.begin());
    if (text == points[4]) formats.pop_back();
    if (text.empty()) {
      formats.push_back(StorageFormat::parse("f32.buffer.nc4hw4"));
      formats.push_back(StorageFormat::parse("f16.buffer.nchw").withWeights(DType::F16));
      formats.push_back(StorageFormat::parse("f16.buffer.nc4hw4").withWeights(DType::Q8_0));
      formats.push_back(StorageFormat::parse("f32.buffer.nchw").withWeights(DType::Q4_0));
    }
    for (StorageFormat f : formats) {
      f = f.withArithmetic(DType::F16);
      for (const auto& prob : gemm.checkProblems(false)) {
        const CheckResult r = checkCase(*be, gemm, v, pt, *prob, f, 17);
        if (r.status == Status::Unsupported) {
          // Only GEGLU's doubled tiles may exceed lavapipe's shared memory.
          EXPECT_NE(r.message.find("GEGLU tiles need"), std::string::npos) << text << " " << r.problem << ": " << r.message;
          ++refused;
          continue;
        }
        EXPECT_EQ(r.status, Status::Ok) << "[" << pt.text() << "] " << f.name() << " " << r.problem << ": " << r.message;
        EXPECT_TRUE(r.canaryIntact);
        EXPECT_EQ(r.badPadding, 0u);
        ok += r.status == Status::Ok;
        gegluOk += r.status == Status::Ok && r.problem.find("epilogue=geglu") != std::string::npos;
      }
    }
  }
  size_t declared = 0;
  for (const auto& param : v.params) declared += param.values.size();
  EXPECT_EQ(values.size(), declared) << "some parameter value is run by no point";
  EXPECT_GE(ok, 40);
  EXPECT_GE(gegluOk, 6);  // the hidden/gate pairing: two points, two formats, and split
  std::cout << "[   NOTE   ] coopmat_f16 emulated: " << ok << " cases ok, " << refused << " GEGLU cases over lavapipe's shared memory\n";
}

// conv coopmat_f16 (the implicit GEMM on tensor cores) where there are none (lavapipe):
// refused by the device rule (check's skipped line) and by the lowering, never run.
TEST(VulkanHarnessCoverage, ConvCoopMatRefusedWithoutCooperativeMatrices) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  if (be->caps().cooperativeMatrix) GTEST_SKIP() << "this device has cooperative matrices: the harness runs coopmat_f16";
  const Family& conv = findFamily("conv");
  const VariantDef& v = conv.variant("coopmat_f16");
  EXPECT_EQ(v.deviceLimitReason(v.defaults(), be->caps()), "device lacks cooperative matrices");
  const auto prob = conv.checkProblems(false).front();
  const StorageFormat f = StorageFormat::parse("f16.buffer.nc4hw4").withArithmetic(DType::F16);
  const CheckResult r = checkCase(*be, conv, v, v.defaults(), *prob, f, 3);
  EXPECT_EQ(r.status, Status::Unsupported) << r.message;
  EXPECT_EQ(lackedCapability(r.message), "device lacks cooperative matrices") << r.message;
  EXPECT_THROW(prepareOp(*be, conv, v, v.defaults(), *prob, f), UnsupportedError);
#if SDSPEED_GLSLC_NV_COOPERATIVE_MATRIX
  ASSERT_NE(findVulkanModules("conv_coopmat"), nullptr) << "glslc compiles GL_NV_cooperative_matrix but made no conv_coopmat";
#else
  EXPECT_EQ(findVulkanModules("conv_coopmat"), nullptr);
#endif
}

// conv coopmat_f16 emulated (COOPMAT_EMULATE: conv_coopmat.comp's coopmat operations in
// scalar code of the same layouts), through checkCase against the Eigen reference at
// coopmat_f16's tolerance: the im2col gather (3x3 at stride 1 and 2, odd sizes, no-bias,
// and 1x1), the tiling (several position and channel tiles), staging, K steps and the
// epilogue (bias, temb, residual, NC4HW4's pad channels), in f32 and f16 storage, both
// layouts, every weight format (f32, f16, q8_0, q4_0). Two points, each within lavapipe's
// 32 KiB of shared memory: the defaults (64 x 128 tiles of 16x16x16, KS 32, double-buffered:
// 30 KiB) and a 64 x 32 tile of 16x8x8 shapes, one subgroup along the positions and four
// along the channels, KS 64 (eight 8-deep coopmat steps per stage), single buffer (13 KiB);
// and, on the stride-1 3x3 problems only, the transposed warp layout (four subgroups along
// the positions, WN 4, KS 16: 10 KiB), so every parameter value runs. Not verified here: the driver's coopmat instructions
// themselves (fragment layouts, alignment, the f32 accumulation).
TEST(VulkanHarnessCoverage, ConvCoopMatEmulatedMatchesReference) {
  vk::VulkanBackend* be = testBackend();
  if (const std::string gap = convCoopMatEmulationGap(be); !gap.empty()) GTEST_SKIP() << gap;
  const Family& conv = findFamily("conv");
  const VariantDef v = emulatedConvCoopMat();
  // (point, format, every quick problem or only the stride-1 3x3 ones): lavapipe compiles
  // a pipeline per module, weight format and (k, stride, pad), ~3 s each without its
  // shader cache, so the weight formats beyond one per point run on one pipeline each.
  struct Case {
    std::string point, format;
    DType weights;
    bool all;
  };
  const std::vector<Case> cases = {
      {"", "f16.buffer.nc4hw4", DType::Q8_0, true},
      {"", "f16.buffer.nchw", DType::F16, false},
      {"", "f32.buffer.nc4hw4", DType::Q4_0, false},
      {"CN=8,CK=8,WM=4,WN=1,SGM=1,SGN=4,KS=64,DB=0", "f32.buffer.nchw", DType::F32, true},
      {"CN=8,CK=8,WM=1,WN=4,SGM=4,SGN=1,KS=16", "f16.buffer.nc4hw4", DType::F32, false},
      // The epilogue's C tile in passes (one 16-deep stage is smaller than it): 2 passes
      // over both subgroup columns in each layout (the quad and the element path), 4 passes.
      {"KS=16,DB=0", "f16.buffer.nc4hw4", DType::F16, false},
      {"KS=16,DB=0,SGN=2", "f32.buffer.nchw", DType::F16, false},
      {"WN=4,SGN=1,KS=16,DB=0", "f16.buffer.nc4hw4", DType::F16, false},
  };
  std::set<std::string> values;  // every parameter value some case ran
  // The quick problems have Cout <= 12: one channel tile. Two more with several (BN is 128
  // at the defaults, 32 at the other point), the last one's NC4HW4 pad channels in it.
  auto problems = conv.checkProblems(false);
  problems.push_back(ConvFamily::problem({1, 20, 6, 7}, 40, 3, 1, true, true, true));
  problems.push_back(ConvFamily::problem({1, 9, 5, 6}, 70, 3, 1, true, false, true));
  // Cin % 8 == 0 (K 144: 4.5 steps of 32), which no quick problem has: tap-major K, B from
  // the derived f16 rows (ConvCoopMatTapMajorEmulatedMatchesReference has more of it).
  problems.push_back(ConvFamily::problem({2, 16, 6, 7}, 24, 3, 1, true, false, true));
  int ok = 0, expected = 0;
  for (const Case& c : cases) {
    const ParamPoint pt = v.parsePoint(c.point);
    ASSERT_LE(v.localMemBytes(pt), be->caps().localMemBytes) << c.point;
    for (const auto& [name, value] : pt.values()) values.insert(name + "=" + std::to_string(value));
    const StorageFormat f = StorageFormat::parse(c.format).withWeights(c.weights).withArithmetic(DType::F16);
    for (const auto& prob : problems) {
      const auto& d = dynamic_cast<const ConvProblem&>(*prob).dims;
      if (!c.all && (d.kernel != 3 || d.stride != 1)) continue;
      ++expected;
      const CheckResult r = checkCase(*be, conv, v, pt, *prob, f, 19);
      EXPECT_EQ(r.status, Status::Ok) << "[" << pt.text() << "] " << f.name() << " " << r.problem << ": " << r.message;
      EXPECT_TRUE(r.canaryIntact);
      EXPECT_EQ(r.badPadding, 0u);
      ok += r.status == Status::Ok;
    }
  }
  // The quick set (four stride-1 3x3 problems, a stride-2 one, a 1x1) and the three above.
  EXPECT_EQ(expected, 2 * 9 + 6 * 7);
  // SK > 1 (split-K) is ConvCoopMatSplitKEmulatedMatchesReference's; here SK = 1 only.
  size_t declared = 0;
  for (const auto& param : v.params) declared += param.name == "SK" ? 1 : param.values.size();
  EXPECT_EQ(values.size(), declared) << "some parameter value is run by no case";
  EXPECT_EQ(ok, expected);
}

// conv coopmat_f16's split-K (SK > 1: conv_coopmat.comp over SK ranges of K steps into f32
// partial sums, then conv_coopmat_reduce.comp: the sum and the epilogue), emulated, through
// checkCase against the Eigen reference, each SK on the problem with bias, temb and
// residual: ranges of several K steps with a short last one (SK 2, 4 on K = 324: 11 steps
// of 32), empty ranges (SK 4 on 6 and 3 steps, SK 16 on 12 and 21 steps of 16), NC4HW4's
// pad channels (Cout 70), no bias, f32 and f16 storage each in both layouts (the layout is
// a push constant: no extra pipeline), f16 and q8_0 weights (the reduce pass decodes bias in
// the op's parameter format), double and single buffering. A lost or repeated K range or a
// dropped epilogue term is an O(1) error, far above coopmat's tolerance. The scratch is the
// declared one (ConvFamily::scratch: SK x N x CoutP x Ho x Wo floats) and both passes'
// events are the op's. CI time: lavapipe compiles each coopmat pipeline slowly (~10 s cold
// on 2 cores), so three SK values, one (k, stride, pad): SK 8 runs the same code as 4 and 16.
TEST(VulkanHarnessCoverage, ConvCoopMatSplitKEmulatedMatchesReference) {
  vk::VulkanBackend* be = testBackend();
  if (const std::string gap = convCoopMatEmulationGap(be); !gap.empty()) GTEST_SKIP() << gap;
  const int errorsBefore = be->instance().validationErrors();
  const Family& conv = findFamily("conv");
  const VariantDef v = emulatedConvCoopMat();
  const auto all3 = ConvFamily::problem({1, 20, 6, 7}, 40, 3, 1, true, true, true);  // K 180: 6 steps of 32
  const auto temb = ConvFamily::problem({2, 36, 10, 10}, 12, 3, 1, true, true);      // K 324: 11 steps
  const auto pad70 = ConvFamily::problem({1, 9, 5, 6}, 70, 3, 1, true, false, true);  // K 81: 3 steps
  const auto noBias = ConvFamily::problem({1, 4, 13, 13}, 3, 3, 1, false);            // K 36: 2 steps
  const auto k144 = ConvFamily::problem({1, 16, 6, 7}, 24, 3, 1, true, false, true);  // K 144: 8-half w chunks
  // The default point is the single pass, without scratch.
  EXPECT_EQ(GemmFamily::coopMatSplitK(v.defaults()), 1);
  EXPECT_EQ(ConvFamily::scratch(v, dynamic_cast<const ConvProblem&>(*all3), v.defaults()).total(), 0u);
  struct Case {
    std::string point;
    std::vector<std::string> formats;  // one storage type: one pipeline
    DType weights;
    std::vector<ProblemPtr> problems;
  };
  const std::vector<Case> cases = {
      {"SK=2", {"f16.buffer.nc4hw4", "f16.buffer.nchw"}, DType::F16, {all3, temb, pad70, k144}},
      {"SK=4", {"f32.buffer.nchw", "f32.buffer.nc4hw4"}, DType::F32, {all3, temb, pad70, noBias}},
      {"SK=16,CN=8,CK=8,WM=1,WN=4,SGM=4,SGN=1,KS=16,DB=0", {"f16.buffer.nchw"}, DType::Q8_0, {all3, temb}},
  };
  std::set<int> splits;
  int ok = 0, expected = 0;
  for (const Case& c : cases) {
    const ParamPoint pt = v.parsePoint(c.point);
    ASSERT_LE(v.localMemBytes(pt), be->caps().localMemBytes) << c.point;
    splits.insert(pt["SK"]);
    for (const std::string& format : c.formats) {
      const StorageFormat f = StorageFormat::parse(format).withWeights(c.weights).withArithmetic(DType::F16);
      for (const auto& prob : c.problems) {
        ++expected;
        const auto& d = dynamic_cast<const ConvProblem&>(*prob).dims;
        const CheckResult r = checkCase(*be, conv, v, pt, *prob, f, 23);
        EXPECT_EQ(r.status, Status::Ok) << "[" << pt.text() << "] " << f.name() << " " << r.problem << ": " << r.message;
        EXPECT_TRUE(r.canaryIntact);
        EXPECT_EQ(r.badPadding, 0u);
        ok += r.status == Status::Ok;
        const size_t partials = static_cast<size_t>(pt["SK"] * d.batch * ((d.cout + 3) / 4 * 4) * d.outHeight() *
                                                    d.outWidth()) * sizeof(float);
        EXPECT_EQ(ConvFamily::scratch(v, dynamic_cast<const ConvProblem&>(*prob), pt).output, partials);
        // k144 (Cin 16) runs tap-major: its resident f16 weight rows count too.
        const size_t rows = ConvFamily::coopMatTapMajor(d) ? static_cast<size_t>(d.cout * d.cin * 9 * 2) : 0;
        EXPECT_EQ(r.scratchBytes, partials + rows) << c.point << " " << r.problem;
      }
    }
  }
  EXPECT_EQ(splits, (std::set<int>{2, 4, 16}));
  EXPECT_EQ(expected, 2 * 4 + 2 * 4 + 2);
  EXPECT_EQ(ok, expected);
  // The op's events: both passes' (its time is the first start to the last end).
  const StorageFormat f = StorageFormat{}.withArithmetic(DType::F16);  // SK=4's pipelines, built above
  auto op = prepareOp(*be, conv, v, v.parsePoint("SK=4"), *all3, f);
  EXPECT_EQ(op->scratchRegions(), std::vector<uint64_t>{4ull * 40 * 6 * 7 * 4});
  OpTensors t = OpTensors::create(*be, conv, *all3, f, false);
  std::mt19937_64 rng(3);
  t.upload(conv.makeInputs(*all3, rng));
  EXPECT_EQ(op->enqueue(t.args()).size(), 2u);
  be->finish();
  EXPECT_EQ(be->instance().validationErrors(), errorsBefore) << be->instance().lastValidationError();
}

// conv coopmat_f16's tap-major K (conv_coopmat.comp's TAPS; ConvFamily::coopMatTapMajor:
// Cin % 8 == 0), emulated, through checkCase against the Eigen reference: A chunks of 8
// channels of one input pixel (two NC4HW4 quads, or 8 NCHW planes), B from the f16 weight
// rows conv_coopmat_weights.comp derives from each weight format (q4_0, f16, q8_0 here).
// Cin 8 (a 32-deep K step spans 4 taps), Cin 24 at stride 2 with NC4HW4 pad channels
// (Cout 70), Cin 40 as a 1x1 with a residual; the rows resident (made on the first call,
// that dispatch untimed) and per call (a scratch region, made and timed at every call);
// split-K on top. A swapped tap / channel in either the rows or the gather, or a chunk
// read from the wrong pixel, is an O(1) error. Cin 4 stays channel-major: no rows.
TEST(VulkanHarnessCoverage, ConvCoopMatTapMajorEmulatedMatchesReference) {
  vk::VulkanBackend* be = testBackend();
  if (const std::string gap = convCoopMatEmulationGap(be); !gap.empty()) GTEST_SKIP() << gap;
  const int errorsBefore = be->instance().validationErrors();
  const Family& conv = findFamily("conv");
  const VariantDef v = emulatedConvCoopMat();
  const auto c8 = ConvFamily::problem({2, 8, 9, 11}, 12, 3, 1, true, true);            // K 72, + temb
  const auto c24 = ConvFamily::problem({1, 24, 11, 9}, 70, 3, 2, true);                // stride 2, pad channels
  const auto c40 = ConvFamily::problem({2, 40, 6, 5}, 9, 1, 1, true, false, true);     // 1x1 + residual
  const auto c4 = ConvFamily::problem({1, 4, 13, 13}, 3, 3, 1, false);                 // conv_in's Cin
  auto dims = [](const ProblemPtr& p) { return dynamic_cast<const ConvProblem&>(*p).dims; };
  EXPECT_TRUE(ConvFamily::coopMatTapMajor(dims(c8)));
  EXPECT_FALSE(ConvFamily::coopMatTapMajor(dims(c4)));
  struct Case {
    std::string point, format;
    DType weights;
    bool perCall;
    std::vector<ProblemPtr> problems;
  };
  const std::vector<Case> cases = {
      {"", "f16.buffer.nc4hw4", DType::Q4_0, false, {c8, c24, c40}},
      {"", "f32.buffer.nchw", DType::F16, true, {c8, c24, c40}},
      {"SK=2", "f16.buffer.nchw", DType::Q8_0, false, {c8}},
  };
  int ok = 0, expected = 0;
  for (const Case& c : cases) {
    const ParamPoint pt = v.parsePoint(c.point);
    const StorageFormat f = StorageFormat::parse(c.format).withWeights(c.weights).withArithmetic(DType::F16);
    for (const auto& prob : c.problems) {
      ++expected;
      const ConvDims d = dims(prob);
      const CheckResult r = checkCase(*be, conv, v, pt, *prob, f, 29, c.perCall);
      EXPECT_EQ(r.status, Status::Ok) << "[" << pt.text() << "] " << f.name() << " " << r.problem << ": " << r.message;
      EXPECT_TRUE(r.canaryIntact);
      EXPECT_EQ(r.badPadding, 0u);
      ok += r.status == Status::Ok;
      const ConvScratch s = ConvFamily::scratch(v, dynamic_cast<const ConvProblem&>(*prob), pt);
      EXPECT_EQ(s.weights, static_cast<size_t>(d.cout * d.cin * d.kernel * d.kernel * 2)) << r.problem;
      EXPECT_EQ(r.scratchBytes, s.output + s.weights) << c.point << " " << r.problem;  // per call: a region of it
    }
  }
  EXPECT_EQ(ok, expected);
  // The op: resident rows made in the first call's recording, their dispatch's event
  // dropped (one event a call); per call, a scratch region and two events a call.
  const StorageFormat f = StorageFormat::parse("f16.buffer.nc4hw4").withWeights(DType::Q4_0).withArithmetic(DType::F16);
  auto op = prepareOp(*be, conv, v, v.defaults(), *c8, f);
  EXPECT_EQ(op->derivedWeightBytes(), 12u * 72 * 2);
  EXPECT_TRUE(op->scratchRegions().empty());
  OpTensors t = OpTensors::create(*be, conv, *c8, f, false);
  std::mt19937_64 rng(5);
  t.upload(conv.makeInputs(*c8, rng));
  EXPECT_EQ(op->enqueue(t.args()).size(), 1u);
  EXPECT_EQ(op->enqueue(t.args()).size(), 1u);
  op->setDerivedWeightsPerCall(true);
  EXPECT_EQ(op->scratchRegions(), std::vector<uint64_t>{12u * 72 * 2});
  EXPECT_EQ(op->enqueue(t.args()).size(), 2u);
  be->finish();
  // Cin 4: channel-major, nothing derived.
  auto op4 = prepareOp(*be, conv, v, v.defaults(), *c4, f);
  EXPECT_EQ(op4->derivedWeightBytes(), 0u);
  EXPECT_THROW(op4->setDerivedWeightsPerCall(true), Error);
  // SDSPEED_VK_CONV_CHANNEL_MAJOR=1 (the device script's A/B switch): Cin 8 channel-major
  // again, f16 weights in 8-half chunks of w's own rows (BVEC), nothing derived.
  setenv("SDSPEED_VK_CONV_CHANNEL_MAJOR", "1", 1);
  const StorageFormat f16w = StorageFormat::parse("f16.buffer.nc4hw4").withWeights(DType::F16).withArithmetic(DType::F16);
  EXPECT_EQ(prepareOp(*be, conv, v, v.defaults(), *c8, f16w)->derivedWeightBytes(), 0u);
  const CheckResult r = checkCase(*be, conv, v, v.defaults(), *c8, f16w, 31);
  unsetenv("SDSPEED_VK_CONV_CHANNEL_MAJOR");
  EXPECT_EQ(r.status, Status::Ok) << r.message;
  EXPECT_EQ(r.scratchBytes, 0u);
  EXPECT_EQ(be->instance().validationErrors(), errorsBefore) << be->instance().lastValidationError();
}

// attention flash_coopmat_f16 on a device without cooperative matrices (lavapipe):
// refused by its device rule with `check`'s skipped line, and by the lowering itself.
TEST(VulkanHarnessCoverage, AttentionCoopMatRefusedWithoutCooperativeMatrices) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  if (be->caps().cooperativeMatrix) GTEST_SKIP() << "this device has cooperative matrices: the harness runs it";
  const Family& fam = findFamily("attention");
  const VariantDef& v = fam.variant(AttentionFamily::kCoopMatVariant);
  EXPECT_EQ(v.deviceLimitReason(v.defaults(), be->caps()), "device lacks cooperative matrices");
  EXPECT_TRUE(samplePoints(v, be->caps(), 2, 7).empty());
  const auto prob = fam.checkProblems(false).back();
  for (const char* text : {"f32.buffer.nchw", "f16.buffer.nc4hw4"}) {
    const StorageFormat f = StorageFormat::parse(text).withArithmetic(DType::F16);
    const CheckResult r = checkCase(*be, fam, v, v.defaults(), *prob, f, 3);
    EXPECT_EQ(r.status, Status::Unsupported) << text << ": " << r.message;
    EXPECT_EQ(lackedCapability(r.message), "device lacks cooperative matrices") << r.message;
    EXPECT_THROW(prepareOp(*be, fam, v, v.defaults(), *prob, f), UnsupportedError) << text;
  }
#if SDSPEED_GLSLC_NV_COOPERATIVE_MATRIX
  EXPECT_NE(findVulkanModules("attention_coopmat"), nullptr) << "glslc compiles the NV extension, no module made";
#else
  EXPECT_EQ(findVulkanModules("attention_coopmat"), nullptr);
#endif
}

// What lavapipe can verify of flash_coopmat_f16 before tensor cores: the shader with the
// coopmat load, multiply-add and store in scalar code by the same layouts
// (COOPMAT_EMULATE), through checkCase against the reference at the variant's tolerance:
// the quick problems (D = 8 and 4, causal, a +-90 mask at D = 40: several query and key
// blocks, S and L off every block), D = 80, and D = 160 and 512 at the points that split
// O's columns (DO); points that together take every parameter value within lavapipe's
// 32 KiB. Not verified: the coopmat instructions themselves (fragment layouts, alignment).
TEST(VulkanHarnessCoverage, AttentionCoopMatEmulatedMatchesReference) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  if (!be->caps().fp16) GTEST_SKIP() << "device lacks shaderFloat16";
  if (!findVulkanModules("attention_coopmat_emu")) GTEST_SKIP() << "this glslc made no float16_t modules";
  const Family& fam = findFamily("attention");
  VariantDef v = fam.variant(AttentionFamily::kCoopMatVariant);
  v.defines["COOPMAT_EMULATE"] = 1;
  v.deviceRule = nullptr;  // no cooperative matrices needed
  const std::vector<std::string> points = {
      "",                                        // defaults: 64 rows, blocks of 32 keys, K chunks of 64, whole head
      "CN=8,CK=8,SG=4,BC=16,DC=16,DO=64,RT=0",  // 8-wide shapes, O split past 64 columns, m moved at every new max
      "CN=8,BC=64,DC=32,SG=1",                   // 16 rows (2 key slices per invocation), large key blocks
      "CK=8,BC=16,DC=32,DO=64,SG=2",             // 32 rows, partial last K chunk at D = 80
      "CN=8,BC=16,DC=16,DO=128,SG=1",            // O's 128 columns at 16 rows (the D = 512 setting)
  };
  std::vector<ProblemPtr> problems = fam.checkProblems(false);
  problems.push_back(AttentionFamily::problem(1, 2, 80, 70, 90));  // SD's D = 80
  // D = 160 and the VAE's 512: run by the points with DO set (O's columns split across
  // work-groups, Q K^T recomputed per split), the others over 32 KiB.
  problems.push_back(AttentionFamily::problem(1, 2, 160, 33, 45));
  problems.push_back(AttentionFamily::problem(1, 1, 512, 40, 50));
  std::set<std::string> values;
  int ok = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const ParamPoint pt = v.parsePoint(points[i]);
    const std::string& text = points[i];
    for (const auto& [name, value] : pt.values()) values.insert(name + "=" + std::to_string(value));
    // f32 NCHW and f16 NC4HW4 in turn (lavapipe builds each pipeline of the emulated
    // shader in ~3 s: one per point, format and O width).
    for (const std::string& ftext : {std::string(i % 2 ? "f16.buffer.nc4hw4" : "f32.buffer.nchw")}) {
      const StorageFormat f = StorageFormat::parse(ftext).withArithmetic(DType::F16);
      for (const auto& prob : problems) {
        const CheckResult r = checkCase(*be, fam, v, pt, *prob, f, 17);
        if (r.status == Status::Unsupported) {
          // Only shared memory past lavapipe's 32 KiB, or O past 16 accumulators (whole heads
          // of 160 at CN = 8, of 512).
          EXPECT_TRUE(r.message.find("bytes of shared memory") != std::string::npos ||
                      r.message.find("O accumulators per subgroup") != std::string::npos)
              << text << " " << r.problem << ": " << r.message;
          continue;
        }
        EXPECT_EQ(r.status, Status::Ok) << "[" << pt.text() << "] " << f.name() << " " << r.problem << ": " << r.message;
        EXPECT_TRUE(r.canaryIntact);
        ok += r.status == Status::Ok;
      }
    }
  }
  size_t declared = 0;
  for (const auto& param : v.params) declared += param.values.size();
  EXPECT_EQ(values.size(), declared) << "some parameter value is run by no point";
  // Every case that fits lavapipe's 32 KiB: none refused for another reason (since K and V
  // have buffers of their own, the defaults at D = 80 take 36624 bytes, past it).
  EXPECT_GE(ok, 27);
  std::cout << "[   NOTE   ] flash_coopmat_f16 emulated: " << ok << " cases ok\n";
}

// The op time on Vulkan has OpenCL's definition: first dispatch start to last end, from
// timestamps, positive for a real dispatch.
TEST(VulkanHarnessCoverage, TimedThroughTheBackendInterface) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  const Family& fam = findFamily("activation");
  const VariantDef& v = fam.variants().front();
  const auto prob = fam.makeProblem(Shape{1, 64, 32, 32}, {{"fn", "silu"}});
  auto op = prepareOp(*be, fam, v, v.defaults(), *prob, StorageFormat{});
  OpTensors t = OpTensors::create(*be, fam, *prob, StorageFormat{}, false);
  TimingPolicy policy;
  policy.minRepeats = 3;
  policy.minTotalMs = 0;
  TimingStats s = timeOp(*be, 1, [&](int) { return op->enqueue(t.args()); }, policy);
  EXPECT_EQ(s.repeats, 3);
  EXPECT_GT(s.minMs, 0.0);
  EXPECT_LT(s.maxMs, 1000.0);
}


// conv's Winograd on Vulkan with derived weights per call (conv_winograd_vulkan.cpp): the
// OpenCL test ConvPerCallBlocks' problem, 150 output channels in blocks of 64 and tiles in
// blocks of 4 (several weight-transform and tile blocks per call), in f32 and in f16
// NC4HW4 with q8_0 weights: bit-identical to resident U, the scratch one block's.
TEST(VulkanConvWinograd, PerCallBlocksMatchResident) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  const int errorsBefore = be->instance().validationErrors();
  const Family& fam = findFamily("conv");
  const auto prob = fam.makeProblem(Shape{2, 12, 9, 11}, {{"cout", "150"}, {"temb", "1"}, {"residual", "1"}});
  for (const char* name : {"winograd_f2x2_3x3", "winograd_f4x4_3x3", "winograd_f6x6_3x3"}) {
    VariantDef v = fam.variant(name);
    v.defines["PER_CALL_CO"] = 64;
    v.defines["PER_CALL_TILES"] = 4;
    const ParamPoint pt = v.defaults();
    for (const StorageFormat f :
         {StorageFormat{}, StorageFormat{DType::F16, Storage::Buffer, Layout::NC4HW4}.withWeights(DType::Q8_0)}) {
      SCOPED_TRACE(std::string(name) + " " + f.name());
      const CheckResult resident = checkCase(*be, fam, v, pt, *prob, f, 77);
      const CheckResult perCall = checkCase(*be, fam, v, pt, *prob, f, 77, /*derivedWeightsPerCall=*/true);
      ASSERT_EQ(resident.status, Status::Ok) << resident.message;
      ASSERT_EQ(perCall.status, Status::Ok) << perCall.message;
      EXPECT_EQ(perCall.outputHash, resident.outputHash) << "per-call blocks differ from resident weights in bits";
      const ConvScratch s = ConvFamily::scratch(v, dynamic_cast<const ConvProblem&>(*prob), pt);
      EXPECT_EQ(s.blockChannels, 64);
      EXPECT_EQ(s.blockTiles, 4);
      EXPECT_EQ(perCall.scratchBytes, s.inputBlock + s.outputBlock + s.weightsBlock);
      EXPECT_EQ(resident.scratchBytes, s.input + s.output + s.weights);
    }
  }
  EXPECT_EQ(be->instance().validationErrors(), errorsBefore) << be->instance().lastValidationError();
}

// The resident U is cached per weight tensor and follows its rewrites: weights uploaded
// again into the same tensor are transformed again (the output is the fresh op's, in
// bits), and every call returns the 3 per-inference dispatches' events (the transform's
// is not timed).
TEST(VulkanConvWinograd, CachedWeightsFollowRewrites) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  const Family& fam = findFamily("conv");
  const VariantDef& v = fam.variant("winograd_f4x4_3x3");
  const auto prob = fam.makeProblem(Shape{1, 8, 10, 10}, {{"cout", "12"}});
  std::mt19937_64 rng(5);
  const auto a = fam.makeInputs(*prob, rng), b = fam.makeInputs(*prob, rng);
  auto run = [&](PreparedOp& op, OpTensors& t) {
    const OpEvents ev = op.enqueue(t.args());
    EXPECT_EQ(ev.size(), 3u);
    be->finish();
    return t.output().download();
  };
  auto op = prepareOp(*be, fam, v, v.defaults(), *prob, StorageFormat{});
  OpTensors t = OpTensors::create(*be, fam, *prob, StorageFormat{}, false);
  t.upload(a);
  const auto ya = run(*op, t);
  EXPECT_EQ(run(*op, t), ya);  // from the cache
  t.upload(b);                 // new weights (and x) in the same tensors
  const auto yb = run(*op, t);
  auto fresh = prepareOp(*be, fam, v, v.defaults(), *prob, StorageFormat{});
  EXPECT_EQ(run(*fresh, t), yb);
  EXPECT_NE(ya, yb);
}

}  // namespace
}  // namespace sdspeed
