// gemm coopmat_f16's declaration and device rule (kernels/gemm/gemm_coopmat.cpp), on
// capability records made by hand: the H200's cooperative-matrix list as it reports it
// (results/vulkan/h200/, /work/shared/vulkan/h200-cooperative-matrix-properties.txt),
// lavapipe's (none), a KHR-only device and OpenCL. Which shapes and points each accepts.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "fake_vulkan_caps.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/registry.h"
#include "tuning/check.h"

using namespace sdspeed;

namespace {

using testing_caps::h200;
using testing_caps::vulkanDevice;

const VariantDef& coopmat() { return findFamily("gemm").variant(GemmFamily::kCoopMatVariant); }

ParamPoint withShape(int cm, int cn, int ck) {
  std::map<std::string, int> v = coopmat().defaults().values();
  v["CM"] = cm;
  v["CN"] = cn;
  v["CK"] = ck;
  return ParamPoint(v);
}

}  // namespace

TEST(GemmCoopMat, DeclaredAsAnF16ArithmeticVariant) {
  const VariantDef& v = coopmat();
  EXPECT_EQ(v.name, "coopmat_f16");
  EXPECT_EQ(v.arithmetic, std::vector<DType>{DType::F16});
  // cl_khr_fp16 is DeviceCaps::fp16 (shaderFloat16) on Vulkan: the shader's f16 tiles.
  EXPECT_EQ(v.deviceLimitReason(v.defaults(), [] {
    DeviceCaps d = h200();
    d.fp16 = false;
    return d;
  }()), "device lacks f16 arithmetic (shaderFloat16)");
  for (const char* p : {"CM", "CN", "CK", "WM", "WN", "SGM", "SGN", "KS", "DB", "SK"}) EXPECT_NE(v.param(p), nullptr) << p;
  // Its own tolerance, not the f32 one and not direct_f16's (gemm_coopmat.cpp says why).
  const Family& gemm = findFamily("gemm");
  const Tolerance t = gemm.tolerance(v, DType::F32);
  EXPECT_DOUBLE_EQ(t.atol, 1e-2);
  EXPECT_DOUBLE_EQ(t.relL2, 3e-3);
  EXPECT_NE(gemm.tolerance(gemm.variant("direct_f16"), DType::F32).relL2, t.relL2);
}

TEST(GemmCoopMat, H200ShapesAreAcceptedOthersRejected) {
  const VariantDef& v = coopmat();
  const DeviceCaps dev = h200();
  // The three NV shapes with f32 accumulators, as the H200 lists them.
  EXPECT_EQ(v.deviceLimitReason(withShape(16, 16, 16), dev), "");
  EXPECT_EQ(v.deviceLimitReason(withShape(16, 8, 16), dev), "");
  EXPECT_EQ(v.deviceLimitReason(withShape(16, 8, 8), dev), "");
  // 16x16x8 is in the parameter space but not in the list.
  EXPECT_EQ(v.deviceLimitReason(withShape(16, 16, 8), dev),
            "device lacks cooperative-matrix shape 16x16x8 f16*f16+f32->f32 (subgroup, NV)");

  // Only f16 accumulators: the f32-accumulating variant takes none of them.
  DeviceCaps f16acc = dev;
  f16acc.coopMat.clear();
  for (const auto& s : dev.coopMat)
    if (s.c == "f16") f16acc.coopMat.push_back(s);
  EXPECT_NE(v.deviceLimitReason(withShape(16, 16, 16), f16acc).find("device lacks cooperative-matrix shape"),
            std::string::npos);
  // KHR only: the shader is GL_NV_cooperative_matrix, so no shape qualifies.
  DeviceCaps khr = dev;
  khr.coopMat.clear();
  for (const auto& s : dev.coopMat)
    if (s.extension == "KHR") khr.coopMat.push_back(s);
  EXPECT_NE(v.deviceLimitReason(withShape(16, 16, 16), khr).find("(subgroup, NV)"), std::string::npos);
  // Workgroup scope is not subgroup scope.
  DeviceCaps wg = dev;
  for (auto& s : wg.coopMat) s.scope = "workgroup";
  EXPECT_NE(v.deviceLimitReason(withShape(16, 16, 16), wg), "");
  // Subgroups of 64 (the shader's warp tiles assume 32).
  DeviceCaps wide = dev;
  wide.subgroupSize = 64;
  EXPECT_NE(v.deviceLimitReason(withShape(16, 16, 16), wide).find("32-invocation subgroups"), std::string::npos);

  // Over the whole space: every accepted point's shape is one of the listed three, the
  // rejected ones are exactly the 16x16x8 points, and `check` has points to sample.
  size_t accepted = 0, rejected = 0;
  for (const ParamPoint& p : v.space()) {
    const std::string why = v.deviceLimitReason(p, dev);
    const bool listed = !(p["CN"] == 16 && p["CK"] == 8);
    EXPECT_EQ(why.empty(), listed) << p.text() << ": " << why;
    (why.empty() ? accepted : rejected) += 1;
    EXPECT_LE(GemmFamily::coopMatLocalBytes(p, false), 49152u) << p.text();  // GEGLU's: per problem
    EXPECT_LE(p["WM"] * p["WN"], 16) << p.text();
    EXPECT_LE(v.workGroupSize(p), 512u) << p.text();
  }
  EXPECT_GT(accepted, 100u);
  EXPECT_GT(rejected, 0u);
  EXPECT_FALSE(samplePoints(v, dev, 2, 1).empty());
}

TEST(GemmCoopMat, NoCooperativeMatricesRejectsEveryPoint) {
  const VariantDef& v = coopmat();
  // lavapipe: Vulkan with shaderFloat16, no cooperative-matrix extension, an empty list.
  DeviceCaps lavapipe = vulkanDevice();
  lavapipe.localMemBytes = 32768;
  lavapipe.subgroupSize = 8;
  // Every point is refused; those within lavapipe's 32 KiB for lack of the matrices (the
  // others first for their shared memory: deviceLimitReason checks the limits first).
  size_t forLack = 0;
  for (const ParamPoint& p : v.space()) {
    const std::string why = v.deviceLimitReason(p, lavapipe);
    EXPECT_NE(why, "") << p.text();
    if (GemmFamily::coopMatLocalBytes(p, false) <= lavapipe.localMemBytes) {
      EXPECT_EQ(why, "device lacks cooperative matrices") << p.text();
      ++forLack;
    }
  }
  EXPECT_GT(forLack, 100u);
  EXPECT_TRUE(samplePoints(v, lavapipe, 2, 1).empty());
  EXPECT_EQ(lackedCapability(v.deviceLimitReason(v.defaults(), lavapipe)), "device lacks cooperative matrices");
  // The flag without a list (an extension whose query failed) still chooses nothing.
  DeviceCaps flagOnly = vulkanDevice();
  flagOnly.cooperativeMatrix = true;
  EXPECT_NE(v.deviceLimitReason(v.defaults(), flagOnly), "");
  // OpenCL, even with cl_khr_fp16: no kernels there, said as a lowering gap.
  DeviceCaps cl;
  cl.maxWorkGroupSize = 1024;
  cl.localMemBytes = 49152;
  cl.extensions = "cl_khr_fp16";
  cl.fp16 = true;
  const std::string why = v.deviceLimitReason(v.defaults(), cl);
  EXPECT_EQ(why, "gemm coopmat_f16 has no opencl kernels (cooperative matrices are Vulkan's)");
  EXPECT_EQ(lackedCapability(why), why);
}

TEST(GemmCoopMat, SharedMemoryAsTheShaderDeclaresIt) {
  // Defaults: BM = BN = 2 * 2 * 16 = 64, KS = 32, two stages. As: 64 rows of 32 + 8
  // halves (5 uvec4s), Bs: 64 rows likewise (x2 under GEGLU), per stage; the epilogue's C
  // tile over them: 64 channels (x2 under GEGLU) of 64 + 4 floats.
  const ParamPoint d = coopmat().defaults();
  // The staging tiles, or the C tile's share over them where it is larger: GEGLU's two of
  // 64 x 68 floats (34816 bytes) exceed its staging (30720) and go in two passes of 17408.
  EXPECT_EQ(GemmFamily::coopMatLocalBytes(d, false), 2u * 2 * (64 * 40 + 64 * 40));
  EXPECT_EQ(GemmFamily::coopMatLocalBytes(d, true), 2u * 2 * (64 * 40 + 2 * 64 * 40));
  // A 128 x 128 tile: 67584 bytes of C tile in two passes (33792) over 40960 of staging.
  const ParamPoint big = coopmat().parsePoint("WM=4,WN=4,SGM=2,SGN=2");
  EXPECT_EQ(GemmFamily::coopMatLocalBytes(big, false), 2u * 2 * (128 * 40 + 128 * 40));
  // One stage of 16-deep steps (DB = 0, KS = 16: 6144 bytes of staging): the 64 x 64 C
  // tile (17408) goes in WN = 2 passes of 8704, still the larger.
  const ParamPoint thin = coopmat().parsePoint("DB=0,KS=16");
  EXPECT_EQ(GemmFamily::coopMatLocalBytes(thin, false), 17408u / 2);
  EXPECT_EQ(coopmat().localMemBytes(d), GemmFamily::coopMatLocalBytes(d, false));
  // GEGLU's larger tiles are checked where the problem is known.
  const Family& gemm = findFamily("gemm");
  DeviceCaps small = h200();
  small.localMemBytes = GemmFamily::coopMatLocalBytes(d, false);
  const auto geglu = gemm.makeProblem({1, 64, 1, 32}, {{"n", "64"}, {"epilogue", "geglu"}});
  const auto plain = gemm.makeProblem({1, 64, 1, 32}, {{"n", "64"}});
  const StorageFormat f = StorageFormat{}.withArithmetic(DType::F16);
  EXPECT_EQ(gemm.unsupportedReason(coopmat(), d, *plain, f, small), "");
  EXPECT_NE(gemm.unsupportedReason(coopmat(), d, *geglu, f, small).find("GEGLU tiles need"), std::string::npos);
  // A 64x64 warp tile (16 accumulators) is in the space; under GEGLU it would hold 32, so
  // GEGLU problems refuse it (and only them).
  const ParamPoint wide = coopmat().parsePoint("WM=4,WN=4");
  EXPECT_EQ(coopmat().violatedConstraint(wide), "");
  EXPECT_EQ(gemm.unsupportedReason(coopmat(), wide, *plain, f, h200()), "");
  EXPECT_EQ(gemm.unsupportedReason(coopmat(), wide, *geglu, f, h200()),
            "GEGLU doubles the accumulators: 2 x WM x WN = 32 per subgroup, at most 16");
  EXPECT_THROW(coopmat().parsePoint("WM=4,WN=4,SGM=4,SGN=4"), Error);  // 256 x 256 tiles: 80 KiB of shared memory
  // An f32-arithmetic format is never run under this f16 variant.
  EXPECT_NE(gemm.unsupportedReason(coopmat(), d, *plain, StorageFormat{}, h200()).find("computes in f16 only"),
            std::string::npos);
}

// Split-K untuned: sized to SD 1.5's GEMMs at the default 64 x 64 tiles and KS = 32
// (GemmFamily::coopMatDefaultSplitK): the latency-bound ones split until each range keeps 4
// K steps or the dispatch has 256 work-groups (the SKs an H100 ran fastest), the ones that fill the GPU stay single-pass;
// a point recorded without SK (an older database) is the single pass; the partial sums'
// bytes, and a split whose partial sums exceed the device's largest allocation is refused.
TEST(GemmCoopMat, SplitKFitsTheProblemUntuned) {
  const VariantDef& v = coopmat();
  const Family& gemm = findFamily("gemm");
  auto fitted = [&](const Shape& x, int n, const std::string& epi) {
    const auto prob = gemm.makeProblem(x, {{"n", std::to_string(n)}, {"epilogue", epi}});
    return v.defaultsFor(*prob)["SK"];
  };
  EXPECT_EQ(fitted({2, 1280, 1, 1}, 1280, "none"), 8);      // time-embedding GEMV: 40 tiles, 40 steps
  EXPECT_EQ(fitted({2, 768, 1, 77}, 1280, "none"), 4);      // context K/V: 80 tiles, 24 steps
  EXPECT_EQ(fitted({2, 768, 1, 77}, 320, "none"), 4);       // 20 tiles: the 4 steps a range bound it
  EXPECT_EQ(fitted({2, 1280, 1, 256}, 1280, "none"), 2);    // 160 tiles: 2 reach the 256 work-groups
  EXPECT_EQ(fitted({2, 320, 1, 4096}, 320, "none"), 1);     // 640 tiles
  EXPECT_EQ(fitted({2, 320, 1, 4096}, 2560, "geglu"), 1);   // 2560 tiles
  EXPECT_EQ(fitted({2, 32, 1, 16}, 64, "none"), 1);         // one K step: nothing to split
  EXPECT_EQ(GemmFamily::coopMatSplitK(ParamPoint({{"CM", 16}})), 1);
  const auto gv = gemm.makeProblem({2, 320, 1, 4096}, {{"n", "2560"}, {"epilogue", "geglu"}});
  const auto& g = dynamic_cast<const GemmProblem&>(*gv);
  EXPECT_EQ(GemmFamily::coopMatSplitKBytes(g, 1), 0u);
  EXPECT_EQ(GemmFamily::coopMatSplitKBytes(g, 4), 4ull * 2 * 2560 * 4096 * 4);  // hidden and gate rows
  DeviceCaps dev = h200();
  dev.maxAllocBytes = 64ull << 20;
  const StorageFormat f = StorageFormat{}.withArithmetic(DType::F16);
  EXPECT_EQ(gemm.unsupportedReason(v, v.parsePoint("SK=2,KS=16"), *gv, f, dev),
            "split-K's 160 MiB of partial sums exceed the device's largest allocation (64 MiB)");
  EXPECT_EQ(gemm.unsupportedReason(v, v.parsePoint("KS=16"), *gv, f, dev), "");
}
