// conv winograd_f2x2_coopmat_f16 on Vulkan (kernels/conv/conv_winograd_coopmat.cpp,
// conv_winograd_vulkan.cpp): Winograd F(2x2, 3x3) whose GEMM over the 16 planes is gemm
// coopmat_f16's tensor-core GEMM with one U per plane. What lavapipe can check: the whole
// op with the GEMM's four coopmat operations in scalar code by the same layouts
// (COOPMAT_EMULATE: modules gemm_coopmat_emu, and gemm_coopmat_emu_acol for f16 planes),
// through checkCase against the Eigen reference
// at the variant's tolerance, output poisoned and a canary past its end. Not checked here:
// the coopmat instructions themselves (scripts/device-vulkan.sh checks them on the GPU).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "kernels/conv/conv_family.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/lowering.h"
#include "kernels/registry.h"
#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/vulkan/backend.h"
#include "runtime/vulkan/instance.h"
#include "vulkan_test_backend.h"
#include "tuning/check.h"

namespace sdspeed {
namespace {

vk::VulkanBackend* testBackend() { return vulkanTestBackend(); }

// Why the emulated variant cannot run on be (empty: it can).
std::string emulationGap(vk::VulkanBackend* be) {
  if (!be) return "no Vulkan driver installed";
  if (!be->caps().fp16) return "device lacks shaderFloat16";
  if (!findVulkanModules("gemm_coopmat_emu")) return "this glslc made no float16_t modules";
  return {};
}

VariantDef emulated(std::map<std::string, int> defines = {}) {
  VariantDef v = findFamily("conv").variant(ConvFamily::kWinogradCoopMatVariant);
  v.defines["COOPMAT_EMULATE"] = 1;
  for (const auto& [k, value] : defines) v.defines[k] = value;
  v.deviceRule = nullptr;  // no cooperative matrices needed
  return v;
}

const ConvDims& dimsOf(const ProblemPtr& p) { return dynamic_cast<const ConvProblem&>(*p).dims; }

// Problems with Cin % 8 == 0 (the variant's rule): odd output sizes (partial 2x2 tiles,
// tiles not a multiple of 4), every epilogue term, NC4HW4 pad channels (Cout 70: more than
// one BN tile at 64), K = Cin of one and several KS steps (8, 40 at KS 16 and 32).
std::vector<ProblemPtr> problems() {
  return {ConvFamily::problem({2, 8, 9, 11}, 12, 3, 1, true, true),        // + temb
          ConvFamily::problem({1, 16, 7, 6}, 70, 3, 1, true, false, true),  // + residual, pad channels
          ConvFamily::problem({1, 40, 5, 5}, 9, 3, 1, false)};              // no bias, 3 K steps of 16
}

// Every problem through checkCase in turn at points that take every parameter value (within
// lavapipe's 32 KiB), each storage layout and type and the weight formats, U resident and
// made per call. A transposed U row, a plane read from the wrong U (wrows), a lost K chunk
// or a V / M offset off by a block is an O(1) error, far above the tolerance.
TEST(VulkanWinogradCoopMat, EmulatedMatchesReference) {
  vk::VulkanBackend* be = testBackend();
  if (const std::string gap = emulationGap(be); !gap.empty()) GTEST_SKIP() << gap;
  const int errorsBefore = be->instance().validationErrors();
  const Family& conv = findFamily("conv");
  const VariantDef v = emulated();
  struct Case {
    std::string point, format;
    DType weights;
    bool perCall;
  };
  const std::vector<Case> cases = {
      {"", "f16.buffer.nc4hw4", DType::Q8_0, false},
      {"PF16=0", "f32.buffer.nchw", DType::F16, true},
      {"CN=8,CK=8,WM=4,WN=1,SGM=1,SGN=4,KS=64,DB=0", "f16.buffer.nchw", DType::F32, false},
      {"CN=8,CK=8,WM=1,WN=4,SGM=4,SGN=1,KS=16", "f32.buffer.nc4hw4", DType::Q4_0, true},
  };
  std::set<std::string> values;  // every parameter value some case ran
  int ok = 0, expected = 0;
  for (const Case& c : cases) {
    const ParamPoint pt = v.parsePoint(c.point);
    ASSERT_LE(v.localMemBytes(pt), be->caps().localMemBytes) << c.point;
    for (const auto& [name, value] : pt.values()) values.insert(name + "=" + std::to_string(value));
    const StorageFormat f = StorageFormat::parse(c.format).withWeights(c.weights).withArithmetic(DType::F16);
    for (const auto& prob : problems()) {
      ++expected;
      const CheckResult r = checkCase(*be, conv, v, pt, *prob, f, 41, c.perCall);
      EXPECT_EQ(r.status, Status::Ok) << "[" << pt.text() << "] " << f.name() << " " << r.problem << ": " << r.message;
      EXPECT_TRUE(r.canaryIntact);
      EXPECT_EQ(r.badPadding, 0u);
      ok += r.status == Status::Ok;
      // U as f16 rows (16 planes x CoutP x Cin halves), V and M in f16 (PF16) or f32, one
      // block each here.
      const ConvDims& d = dimsOf(prob);
      const ConvScratch s = ConvFamily::scratch(v, dynamic_cast<const ConvProblem&>(*prob), pt);
      const size_t coutP = static_cast<size_t>((d.cout + 3) / 4 * 4);
      EXPECT_EQ(s.weights, 16 * coutP * static_cast<size_t>(d.cin) * 2);
      // V's and M's rows: the tiles rounded up to 8 (whole chunks for the GEMM's staging).
      const size_t tilesP = static_cast<size_t>((d.batch * ((d.height + 1) / 2) * ((d.width + 1) / 2) + 7) / 8 * 8);
      EXPECT_EQ(s.input + s.output, 16 * (static_cast<size_t>(d.cin) + coutP) * tilesP * (pt["PF16"] ? 2 : 4));
      EXPECT_EQ(r.scratchBytes, s.input + s.output + s.weights) << c.point << " " << r.problem;
    }
  }
  size_t declared = 0;
  for (const auto& param : v.params) declared += param.values.size();
  EXPECT_EQ(values.size(), declared) << "some parameter value is run by no case";
  EXPECT_EQ(expected, 4 * 3);
  EXPECT_EQ(ok, expected);
  EXPECT_EQ(be->instance().validationErrors(), errorsBefore) << be->instance().lastValidationError();
}

// Per call in several blocks (PER_CALL_CO, PER_CALL_TILES: the harness's overrides of the
// 16 MiB rule): U made per block of 8 output channels into one region (wrows = the block),
// V and M per block of 8 tiles, bit-identical to one block of everything (the same f16
// products summed in the same order per output). Then the op's events and regions.
TEST(VulkanWinogradCoopMat, PerCallBlocksMatchResidentBits) {
  vk::VulkanBackend* be = testBackend();
  if (const std::string gap = emulationGap(be); !gap.empty()) GTEST_SKIP() << gap;
  const int errorsBefore = be->instance().validationErrors();
  const Family& conv = findFamily("conv");
  const VariantDef whole = emulated(), blocked = emulated({{"PER_CALL_CO", 8}, {"PER_CALL_TILES", 8}});
  const auto prob = ConvFamily::problem({2, 16, 9, 7}, 20, 3, 1, true, true, true);  // 50 tiles, CoutP 20
  const ConvScratch s = ConvFamily::scratch(blocked, dynamic_cast<const ConvProblem&>(*prob), blocked.defaults());
  EXPECT_EQ(s.blockChannels, 8);
  EXPECT_EQ(s.blockTiles, 8);
  EXPECT_EQ(s.weightsBlock * 20, s.weights * 8);
  const StorageFormat f = StorageFormat::parse("f16.buffer.nc4hw4").withWeights(DType::F16).withArithmetic(DType::F16);
  const CheckResult resident = checkCase(*be, conv, whole, whole.defaults(), *prob, f, 43);
  const CheckResult perCall = checkCase(*be, conv, blocked, blocked.defaults(), *prob, f, 43, true);
  ASSERT_EQ(resident.status, Status::Ok) << resident.message;
  ASSERT_EQ(perCall.status, Status::Ok) << perCall.message;
  EXPECT_EQ(perCall.outputHash, resident.outputHash) << "per-call blocks differ from resident weights in bits";
  EXPECT_EQ(perCall.scratchBytes, s.inputBlock + s.outputBlock + s.weightsBlock);
  // Resident: U made in the first call's recording, its dispatch's event dropped: per call
  // the input transform, the GEMM and the output transform.
  auto op = prepareOp(*be, conv, whole, whole.defaults(), *prob, f);
  OpTensors t = OpTensors::create(*be, conv, *prob, f, false);
  std::mt19937_64 rng(7);
  t.upload(conv.makeInputs(*prob, rng));
  EXPECT_EQ(op->enqueue(t.args()).size(), 3u);
  EXPECT_EQ(op->enqueue(t.args()).size(), 3u);
  be->finish();
  EXPECT_EQ(be->instance().validationErrors(), errorsBefore) << be->instance().lastValidationError();
}

// Refusals, one line each: Cin % 8 != 0, a 1x1 or a stride-2 convolution (the family's
// reasons), OpenCL (no kernels), and on a device without cooperative matrices (lavapipe)
// the device rule's skipped line, the real module never built.
TEST(VulkanWinogradCoopMat, RefusedWithReasons) {
  vk::VulkanBackend* be = testBackend();
  if (!be) GTEST_SKIP() << "no Vulkan driver installed";
  const Family& conv = findFamily("conv");
  const VariantDef& v = conv.variant(ConvFamily::kWinogradCoopMatVariant);
  EXPECT_EQ(ConvFamily::winogradTile(v), 2);
  EXPECT_DOUBLE_EQ(ConvFamily::multiplicationsPerOutput(v, dynamic_cast<const ConvProblem&>(*problems()[0])), 4.0);
  // Every coopmat parameter but SK, and PF16.
  std::vector<std::string> names, coopNames;
  for (const auto& p : v.params) names.push_back(p.name);
  for (const auto& p : GemmFamily::coopMatVariant().params)
    if (p.name != "SK") coopNames.push_back(p.name);
  coopNames.push_back("PF16");
  EXPECT_EQ(names, coopNames);
  const StorageFormat f = StorageFormat::parse("f16.buffer.nc4hw4").withArithmetic(DType::F16);
  const DeviceCaps& caps = be->caps();
  const VariantDef emu = emulated();  // no device rule: the family's own reasons
  auto reason = [&](const ProblemPtr& p) { return conv.unsupportedReason(emu, emu.defaults(), *p, f, caps); };
  EXPECT_EQ(reason(ConvFamily::problem({1, 12, 6, 6}, 8)),
            "winograd_f2x2_coopmat_f16 needs Cin % 8 == 0 (U's f16 rows in 8-half chunks), got Cin 12");
  EXPECT_NE(reason(ConvFamily::problem({1, 16, 6, 6}, 8, 1)).find("needs a 3x3 kernel with stride 1"), std::string::npos);
  EXPECT_NE(reason(ConvFamily::problem({1, 16, 6, 6}, 8, 3, 2)).find("needs a 3x3 kernel with stride 1"),
            std::string::npos);
  DeviceCaps cl = caps;
  cl.api = "opencl";
  EXPECT_EQ(v.deviceRule(v.defaults(), cl),
            "conv coopmat_f16 has no opencl kernels (cooperative matrices are Vulkan's)");
  if (caps.cooperativeMatrix) GTEST_SKIP() << "this device has cooperative matrices: the harness runs it";
  EXPECT_EQ(v.deviceLimitReason(v.defaults(), caps), "device lacks cooperative matrices");
  const CheckResult r = checkCase(*be, conv, v, v.defaults(), *problems()[0], f, 3);
  EXPECT_EQ(r.status, Status::Unsupported) << r.message;
  EXPECT_EQ(lackedCapability(r.message), "device lacks cooperative matrices") << r.message;
}

}  // namespace
}  // namespace sdspeed
