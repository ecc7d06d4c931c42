// The executor's choice when no tuning-database entry answers (issue #22: the race
// command `run --backend vulkan --arithmetic f16` reaches the tensor cores untuned):
// chooseVariant walks the family's default order (VariantDef::defaultRank), so GEMM under
// f16 arithmetic runs coopmat_f16 on a device with the H200's cooperative-matrix list and
// the next half variant on lavapipe's caps; a database entry still wins. The refusals are
// the family's own rules on capability records made by hand (no backend: the Vulkan
// lowering gap is the executor's part, exercised by the CLI tests on lavapipe).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "fake_vulkan_caps.h"
#include "kernels/attention/attention_family.h"
#include "kernels/common/half_variant.h"
#include "kernels/conv/conv_family.h"
#include "kernels/registry.h"
#include "pipeline/exec/graph_executor.h"
#include "tuning/strategy.h"
#include "test_support.h"

using namespace sdspeed;

namespace {

// The H200's limits, with and without its cooperative-matrix list.
using testing_caps::h200;
using testing_caps::vulkanDevice;

// lavapipe: shaderFloat16, no cooperative matrices, 32 KiB shared memory, subgroups of 8.
DeviceCaps lavapipe() {
  DeviceCaps d = vulkanDevice();
  d.localMemBytes = 32768;
  d.subgroupSize = 8;
  return d;
}

struct Case {
  const Family& fam = findFamily("gemm");
  // A GEGLU of SD's shape, smaller: the epilogue the race's feed-forward runs.
  ProblemPtr prob = fam.makeProblem({2, 320, 1, 256}, {{"n", "2560"}, {"epilogue", "geglu"}});
  StorageFormat format = StorageFormat::parse("f16.buffer.nchw").withWeights(DType::F16).withArithmetic(DType::F16);

  NodeChoice choose(const TunedChooser& chooser, const DeviceCaps& dev, const std::vector<std::string>* allowed = nullptr) {
    const auto why = [&](const TunedChoice& c) {
      const VariantDef& v = fam.variant(c.variant);
      return fam.unsupportedReason(v, v.parsePoint(c.params), *prob, format, dev);
    };
    std::string refused;
    auto c = chooseVariant(chooser, fam, OpInstance::of(fam, *prob, format), allowed, why, refused);
    if (!c) throw Error("nothing runs: " + refused);
    return *c;
  }
};

const std::string kKey = "vulkan-nvidia-h200-580";

}  // namespace

TEST(DefaultChoice, GemmOrderIsDeclaredAsData) {
  // Among the f16-arithmetic variants: gemv_f16 first (it refuses problems of more than a
  // few positions per sample), then the tensor cores, direct_f16 last (tiled_f16, the
  // half lane's, between them: it inherits tiled's rank through halfVariant).
  std::vector<std::string> half, all;
  for (const VariantDef* v : defaultOrder(findFamily("gemm"))) {
    all.push_back(v->name);
    if (computesInHalf(*v)) half.push_back(v->name);
  }
  ASSERT_GE(half.size(), 2u);
  EXPECT_EQ(half.front(), "gemv_f16");
  EXPECT_EQ(half.at(1), "coopmat_f16");
  EXPECT_EQ(half.back(), "direct_f16");
  // f32: tiled, the tuned one, before direct, as when the first declared variant was the default.
  EXPECT_LT(std::find(all.begin(), all.end(), "tiled"), std::find(all.begin(), all.end(), "direct"));
  // A family with no ranks keeps its declaration order.
  const Family& conv = findFamily("activation");
  std::vector<std::string> declared, ordered;
  for (const auto& v : conv.variants()) declared.push_back(v.name);
  for (const VariantDef* v : defaultOrder(conv)) ordered.push_back(v->name);
  ASSERT_GE(declared.size(), 2u);
  EXPECT_EQ(ordered, declared);
  // The token-row families: split and its half twin (rank 1) first, the rest as declared.
  for (const char* name : {"softmax", "layernorm"}) {
    std::vector<std::string> rows;
    for (const VariantDef* v : defaultOrder(findFamily(name))) rows.push_back(v->name);
    EXPECT_EQ(rows, (std::vector<std::string>{"split", "split_f16", "per_item", "cooperative", "cooperative_f16"}))
        << name;
  }
  // GroupNorm: two_pass_f16 first (the VAE's 32 work-groups under one_pass), the rest as declared.
  std::vector<std::string> gnOrder;
  for (const VariantDef* v : defaultOrder(findFamily("groupnorm"))) gnOrder.push_back(v->name);
  ASSERT_FALSE(gnOrder.empty());
  EXPECT_EQ(gnOrder.front(), "two_pass_f16");
  EXPECT_LT(std::find(gnOrder.begin(), gnOrder.end(), "two_pass"), std::find(gnOrder.begin(), gnOrder.end(), "one_pass"));
}

TEST(DefaultChoice, UntunedF16GemmRunsTheTensorCoresWhereTheDeviceHasThem) {
  sdspeed_test::TempDir dir;  // no database file: every lookup is the generic default
  Case k;
  const NodeChoice onH200 = k.choose(TunedChooser(dir.path(), kKey, h200()), h200());
  EXPECT_EQ(onH200.variant, "coopmat_f16") << onH200.source;
  EXPECT_EQ(onH200.source.find("fallback"), std::string::npos) << onH200.source;

  // lavapipe: the next f16 variant in the family's order that takes 256 positions, saying
  // why not the tensor cores.
  const NodeChoice onLavapipe = k.choose(TunedChooser(dir.path(), kKey, lavapipe()), lavapipe());
  std::string next;
  for (const VariantDef* v : defaultOrder(k.fam))
    if (computesInHalf(*v) && v->name != "coopmat_f16" && v->name != "gemv_f16" && next.empty()) next = v->name;
  EXPECT_EQ(onLavapipe.variant, next);
  EXPECT_NE(onLavapipe.variant, "coopmat_f16");
  EXPECT_NE(onLavapipe.source.find("not coopmat_f16"), std::string::npos) << onLavapipe.source;
  EXPECT_NE(onLavapipe.source.find("device lacks cooperative matrices"), std::string::npos) << onLavapipe.source;
  // f32 variants refused for their arithmetic are not listed (every one of them would be).
  EXPECT_EQ(onLavapipe.source.find("computes in f32 only"), std::string::npos) << onLavapipe.source;

  // f32 arithmetic on the same device: tiled, as before ranks existed.
  k.format = k.format.withArithmetic(DType::F32);
  EXPECT_EQ(k.choose(TunedChooser(dir.path(), kKey, h200()), h200()).variant, "tiled");
}

// The time embedding's Linears (2 samples of 1 position): gemv, untuned, on every device
// and in both arithmetics; past 8 positions in all it refuses and the order goes on.
TEST(DefaultChoice, UntunedFewPositionGemmRunsGemv) {
  sdspeed_test::TempDir dir;
  Case k;
  k.prob = k.fam.makeProblem({2, 1280, 1, 1}, {{"n", "1280"}});
  EXPECT_EQ(k.choose(TunedChooser(dir.path(), kKey, h200()), h200()).variant, "gemv_f16");
  EXPECT_EQ(k.choose(TunedChooser(dir.path(), kKey, lavapipe()), lavapipe()).variant, "gemv_f16");
  k.format = k.format.withArithmetic(DType::F32);
  EXPECT_EQ(k.choose(TunedChooser(dir.path(), kKey, h200()), h200()).variant, "gemv");
  k.prob = k.fam.makeProblem({2, 1280, 1, 5}, {{"n", "1280"}});
  const NodeChoice wide = k.choose(TunedChooser(dir.path(), kKey, h200()), h200());
  EXPECT_EQ(wide.variant, "tiled");
  EXPECT_NE(wide.source.find("at most 8 positions"), std::string::npos) << wide.source;
}

TEST(DefaultChoice, ADatabaseEntryWinsOverTheDefaultOrder) {
  sdspeed_test::TempDir dir;
  Case k;
  TuningDatabase db;
  db.deviceKey = kKey;
  db.deviceName = "NVIDIA H200";
  db.driver = "580.159.04";
  db.record(OpInstance::of(k.fam, *k.prob, k.format), "direct_f16", "WG=64,HK=8", 120.0, 110.0);
  db.save(dir.path() + "/" + kKey + ".yaml");
  const NodeChoice c = k.choose(TunedChooser(dir.path(), kKey, h200()), h200());
  EXPECT_EQ(c.variant, "direct_f16");
  EXPECT_EQ(c.params, "WG=64,HK=8");
  EXPECT_EQ(c.source, "exact");
  // An allowed list (an ablation row's) ending with the tensor cores runs them: not every
  // allowed variant is timed, so the last that can run.
  const std::vector<std::string> allowed{"direct_f16", "coopmat_f16"};
  EXPECT_EQ(k.choose(TunedChooser(dir.path(), kKey, h200()), h200(), &allowed).variant, "coopmat_f16");
  EXPECT_EQ(k.choose(TunedChooser(dir.path(), kKey, lavapipe()), lavapipe(), &allowed).variant, "direct_f16");
}

// conv coopmat_f16 takes gemm coopmat_f16's declaration (ConvFamily::coopMatVariant), its
// rank included: an untuned f16 convolution runs the tensor cores where the device lists
// them, and elsewhere the first half twin in declaration order (im2col_gemm_f16).
TEST(DefaultChoice, UntunedF16ConvRunsTheTensorCoresWhereTheDeviceHasThem) {
  sdspeed_test::TempDir dir;
  Case k{findFamily("conv"), ConvFamily::problem({2, 64, 16, 16}, 64, 3, 1, true, true, true)};
  EXPECT_EQ(k.choose(TunedChooser(dir.path(), kKey, h200()), h200()).variant, "coopmat_f16");
  const NodeChoice onLavapipe = k.choose(TunedChooser(dir.path(), kKey, lavapipe()), lavapipe());
  EXPECT_EQ(onLavapipe.variant, "im2col_gemm_f16") << onLavapipe.source;
  EXPECT_NE(onLavapipe.source.find("device lacks cooperative matrices"), std::string::npos) << onLavapipe.source;
  // The 1x1 convolutions likewise: the tensor cores, else the first twin that runs k = 1.
  Case one{findFamily("conv"), ConvFamily::problem({2, 64, 16, 16}, 32, 1, 1, true, false, false)};
  EXPECT_EQ(one.choose(TunedChooser(dir.path(), kKey, h200()), h200()).variant, "coopmat_f16");
}

// attention flash_coopmat_f16 is ranked first: an untuned f16 attention runs the tensor
// cores where the device lists a shape, flash_f16 elsewhere (and under f32, flash's order
// is unchanged: the coopmat variant computes in f16 only).
TEST(DefaultChoice, UntunedF16AttentionRunsTheTensorCoresWhereTheDeviceHasThem) {
  sdspeed_test::TempDir dir;
  Case k{findFamily("attention"), AttentionFamily::problem(2, 8, 40, 4096, 4096)};
  k.format = StorageFormat::parse("f16.buffer.nc4hw4").withArithmetic(DType::F16);
  const NodeChoice onH200 = k.choose(TunedChooser(dir.path(), kKey, h200()), h200());
  EXPECT_EQ(onH200.variant, "flash_coopmat_f16") << onH200.source;
  const NodeChoice onLavapipe = k.choose(TunedChooser(dir.path(), kKey, lavapipe()), lavapipe());
  EXPECT_EQ(onLavapipe.variant, "flash_f16") << onLavapipe.source;
  EXPECT_NE(onLavapipe.source.find("device lacks cooperative matrices"), std::string::npos) << onLavapipe.source;
  // The VAE's single head of 512: the fitted point (O split in columns) runs.
  Case vae{findFamily("attention"), AttentionFamily::problem(1, 1, 512, 4096, 4096)};
  vae.format = k.format;
  EXPECT_EQ(vae.choose(TunedChooser(dir.path(), kKey, h200()), h200()).variant, "flash_coopmat_f16");
  k.format = k.format.withArithmetic(DType::F32);
  EXPECT_NE(k.choose(TunedChooser(dir.path(), kKey, h200()), h200()).variant, "flash_coopmat_f16");
}

// Untuned, conv coopmat_f16's split-K is sized to the problem (VariantDef::fitDefaults,
// ConvFamily::coopMatDefaultSplitK): the smallest SK giving 2048 subgroups (256
// work-groups of the 64x128 defaults), each split keeping 16 K steps of 32. The executor's choice carries it (the race
// runs SD 1.5's 8x8-latent convolutions at SK 16), the declared defaults stay SK = 1,
// and a database entry's point is never refitted.
TEST(DefaultChoice, ConvCoopMatSplitKFitsTheProblemUntuned) {
  const Family& fam = findFamily("conv");
  const VariantDef& v = fam.variant(ConvFamily::kCoopMatVariant);
  EXPECT_EQ(v.defaults()["SK"], 1);
  auto sk = [&](Shape x, int64_t cout, int k = 3) {
    const ProblemPtr p = ConvFamily::problem(x, cout, k);
    const ParamPoint d = v.defaultsFor(*p);
    EXPECT_EQ(d["SK"], ConvFamily::coopMatDefaultSplitK(v.defaults(), dynamic_cast<const ConvProblem&>(*p).dims));
    return d["SK"];
  };
  // The defaults' 64x128 tiles of 8 subgroups: the target is 256 work-groups.
  EXPECT_EQ(v.defaults()["SGM"] * v.defaults()["SGN"], 8);
  EXPECT_EQ(sk({2, 1280, 8, 8}, 1280), 16);    // 20 tiles, 360 steps: 320 groups at the cap
  EXPECT_EQ(sk({2, 2560, 8, 8}, 1280), 16);
  EXPECT_EQ(sk({2, 1280, 16, 16}, 1280), 4);   // 80 tiles
  EXPECT_EQ(sk({2, 640, 32, 32}, 640), 2);     // 160 tiles
  EXPECT_EQ(sk({2, 320, 64, 64}, 320), 1);     // 384 tiles of 8 subgroups: the GPU is full
  // 64x64 tiles (4 subgroups) keep the rule's 512 groups: 160 tiles of the 1280-channel
  // conv split 4 ways there as 80 of 64x128 do here.
  const ProblemPtr p1280 = ConvFamily::problem({2, 1280, 16, 16}, 1280, 3);
  EXPECT_EQ(ConvFamily::coopMatDefaultSplitK(v.parsePoint("SGN=2"), dynamic_cast<const ConvProblem&>(*p1280).dims), 4);
  EXPECT_EQ(sk({2, 1280, 8, 8}, 1280, 1), 2);  // 1x1: 40 steps, a split of 20 but not of 10
  EXPECT_EQ(sk({1, 5, 7, 9}, 7), 1);           // K = 45: two steps, nothing to split

  sdspeed_test::TempDir dir;  // no database: the executor takes the family's default order
  const StorageFormat f =
      StorageFormat::parse("f16.buffer.nc4hw4").withWeights(DType::F16).withArithmetic(DType::F16);
  const ProblemPtr prob = ConvFamily::problem({2, 1280, 8, 8}, 1280, 3, 1, true, false, true);
  const auto why = [&](const TunedChoice& c) {
    const VariantDef& cv = fam.variant(c.variant);
    return fam.unsupportedReason(cv, cv.parsePoint(c.params), *prob, f, h200());
  };
  std::string refused;
  const OpInstance inst = OpInstance::of(fam, *prob, f);
  const auto c = chooseVariant(TunedChooser(dir.path(), kKey, h200()), fam, inst, nullptr, why, refused);
  ASSERT_TRUE(c) << refused;
  EXPECT_EQ(c->variant, "coopmat_f16") << c->source;
  EXPECT_EQ(v.parsePoint(c->params)["SK"], 16) << c->params;
  EXPECT_EQ(TuningDatabase{}.lookup(fam, inst, "coopmat_f16").params, c->params);

  TuningDatabase db;
  db.deviceKey = kKey;
  db.deviceName = "NVIDIA H200";
  db.driver = "580.159.04";
  db.record(inst, "coopmat_f16", "SK=2", 200.0, 190.0);
  db.save(dir.path() + "/" + kKey + ".yaml");
  const auto t = chooseVariant(TunedChooser(dir.path(), kKey, h200()), fam, inst, nullptr, why, refused);
  ASSERT_TRUE(t) << refused;
  EXPECT_EQ(t->source, "exact");
  EXPECT_EQ(v.parsePoint(t->params)["SK"], 2) << t->params;
}

// A point taken from another instance (here the device default: the one entry's winner)
// has its SK sized again for the instance that takes it, at the taken point's tiles, and
// says so; the exact instance keeps what was tuned.
TEST(DefaultChoice, ConvCoopMatSplitKRefittedWhenTakenFromAnotherInstance) {
  const Family& fam = findFamily("conv");
  const VariantDef& v = fam.variant(ConvFamily::kCoopMatVariant);
  const StorageFormat f =
      StorageFormat::parse("f16.buffer.nc4hw4").withWeights(DType::F16).withArithmetic(DType::F16);
  const OpInstance big = OpInstance::of(fam, *ConvFamily::problem({2, 320, 64, 64}, 320), f);
  const OpInstance small = OpInstance::of(fam, *ConvFamily::problem({2, 1280, 8, 8}, 1280), f);
  TuningDatabase db;
  db.record(big, "coopmat_f16", "KS=16,SK=1", 500.0, 490.0);
  const TunedChoice exact = db.lookup(fam, big);
  EXPECT_EQ(exact.step, TunedStep::Exact);
  EXPECT_EQ(v.parsePoint(exact.params)["SK"], 1);
  const TunedChoice taken = db.lookup(fam, small);
  ASSERT_TRUE(taken.tuned()) << taken.source;
  EXPECT_NE(taken.step, TunedStep::Exact);
  const ParamPoint p = v.parsePoint(taken.params);
  EXPECT_EQ(p["KS"], 16);  // the taken point's tiles and K step stay
  // 20 tiles of 64x128, 720 K steps of 16: SK 16 gives 320 work-groups of 45 steps.
  EXPECT_EQ(p["SK"], 16) << taken.params;
  EXPECT_NE(taken.source.find("SK sized to this instance"), std::string::npos) << taken.source;
  EXPECT_EQ(taken.medianUs, 0.0);
}

// The tuner's walks start where an untuned run stands: anneal and model seed each variant
// at its defaults fitted to the instance's problem (SK 16 for the 8x8-latent conv), and
// at the declared defaults when no problem is given.
TEST(DefaultChoice, TuningWalksStartFromTheFittedDefaults) {
  const Family& fam = findFamily("conv");
  const std::vector<Candidate> space = tuningSpace(fam, h200(), {"coopmat_f16"});
  ASSERT_FALSE(space.empty());
  const ProblemPtr prob = ConvFamily::problem({2, 1280, 8, 8}, 1280);
  for (const char* name : {"anneal", "model"}) {
    auto fitted = makeStrategy(name, space, 10, 1, prob.get());
    const auto first = fitted->next();
    ASSERT_TRUE(first) << name;
    EXPECT_EQ(space[*first].point["SK"], 16) << name << " " << space[*first].text();
    auto declared = makeStrategy(name, space, 10, 1);
    const auto d = declared->next();
    ASSERT_TRUE(d) << name;
    EXPECT_EQ(space[*d].point, space[*d].variant->defaults()) << name;
  }
}
