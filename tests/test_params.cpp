// Parameter spaces declared as data (kernels/family.h), through the real GroupNorm
// family and a small hand-made variant, and the family registry.
#include <gtest/gtest.h>

#include <set>

#include "kernels/common/half_variant.h"
#include "kernels/family.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/groupnorm/groupnorm_family.h"
#include "kernels/registry.h"
#include "runtime/opencl/cl_error.h"
#include "tuning/check.h"
#include "fake_vulkan_caps.h"
#include "test_support.h"

using namespace sdspeed;

namespace {

bool listed(const ParamDef& def, int v) {
  for (int x : def.values)
    if (x == v) return true;
  return false;
}

// Every point of the Cartesian product of v's parameter lists, constrained or not.
std::vector<std::map<std::string, int>> product(const VariantDef& v) {
  std::vector<std::map<std::string, int>> out{{}};
  for (const auto& p : v.params) {
    std::vector<std::map<std::string, int>> next;
    for (const auto& partial : out)
      for (int x : p.values) {
        auto m = partial;
        m[p.name] = x;
        next.push_back(m);
      }
    out = std::move(next);
  }
  return out;
}

}  // namespace

TEST(GroupNormParams, HasOnePassAndTwoPass) {
  GroupNormFamily fam;
  EXPECT_EQ(fam.name(), "groupnorm");
  std::set<std::string> names;
  for (const auto& v : fam.variants()) names.insert(v.name);
  EXPECT_EQ(names.size(), fam.variants().size()) << "variant names are unique";
  EXPECT_EQ(names.count("one_pass"), 1u);
  EXPECT_EQ(names.count("two_pass"), 1u);
  std::string msg = sdspeed_test::errorMessage([&] { fam.variant("three_pass"); });
  EXPECT_NE(msg.find("unknown variant 'three_pass'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("one_pass"), std::string::npos) << msg;
}

// two_pass_f16 computes in half only on Vulkan (groupnorm_two_pass.comp): groupnorm.cl's
// two_pass has no half body, so an OpenCL device with cl_khr_fp16 refuses it in one line
// (never runs f32 code under the half twin's name); on Vulkan the rule lets it through.
TEST(GroupNormParams, TwoPassHalfIsVulkanOnly) {
  GroupNormFamily fam;
  const VariantDef& v = fam.variant("two_pass_f16");
  EXPECT_TRUE(computesInHalf(v));
  const auto prob = fam.checkProblems(false).front();
  const StorageFormat f = StorageFormat{}.withArithmetic(DType::F16);
  DeviceCaps phone = testing_caps::h200();  // a GPU's limits, through OpenCL with cl_khr_fp16
  phone.api = "opencl";
  phone.fp16 = true;
  phone.extensions += " cl_khr_fp16";
  EXPECT_EQ(fam.unsupportedReason(v, v.defaults(), *prob, f, phone),
            "two_pass_f16 has no opencl kernels (Vulkan only; two_pass computes in f32 here)");
  DeviceCaps vulkan = phone;
  vulkan.api = "vulkan";
  EXPECT_EQ(fam.unsupportedReason(v, v.defaults(), *prob, f, vulkan), "");
}

TEST(GroupNormParams, DefaultsAreFirstValues) {
  GroupNormFamily fam;
  for (const auto& v : fam.variants()) {
    SCOPED_TRACE(v.name);
    ASSERT_FALSE(v.params.empty());
    const ParamPoint d = v.defaults();
    EXPECT_EQ(d.values().size(), v.params.size());
    for (const auto& p : v.params) {
      ASSERT_FALSE(p.values.empty()) << p.name;
      EXPECT_EQ(d[p.name], p.values.front()) << p.name;
      EXPECT_FALSE(p.help.empty()) << p.name;
    }
    EXPECT_EQ(v.violatedConstraint(d), "") << "defaults violate a constraint";
    EXPECT_EQ(v.parsePoint(""), d);
    EXPECT_EQ(v.parsePoint(d.text()), d);
  }
  const ParamPoint one = fam.variant("one_pass").defaults();
  std::string msg = sdspeed_test::errorMessage([&] { one["NOPE"]; });
  EXPECT_NE(msg.find("NOPE"), std::string::npos) << msg;
}

TEST(GroupNormParams, SpaceIsExactlyTheConstrainedProduct) {
  GroupNormFamily fam;
  for (const auto& v : fam.variants()) {
    SCOPED_TRACE(v.name);
    const auto space = v.space();
    ASSERT_FALSE(space.empty());
    std::set<std::string> seen;
    for (const auto& p : space) {
      EXPECT_TRUE(seen.insert(p.text()).second) << "duplicate point " << p.text();
      EXPECT_EQ(p.values().size(), v.params.size()) << p.text();
      for (const auto& def : v.params) EXPECT_TRUE(listed(def, p[def.name])) << p.text();
      for (const auto& c : v.constraints) EXPECT_TRUE(c.holds(p)) << p.text() << " violates " << c.description;
    }
    // Independently: the product filtered by the constraints.
    size_t want = 0;
    for (const auto& m : product(v)) {
      ParamPoint p(m);
      bool ok = true;
      for (const auto& c : v.constraints) ok = ok && c.holds(p);
      if (ok) {
        ++want;
        EXPECT_EQ(seen.count(p.text()), 1u) << "valid point missing from space(): " << p.text();
      } else {
        EXPECT_EQ(seen.count(p.text()), 0u) << "invalid point in space(): " << p.text();
      }
    }
    EXPECT_EQ(space.size(), want);
  }
  // one_pass excludes VEC * CACHE > 64, so its space is smaller than the full product.
  const VariantDef& one = fam.variant("one_pass");
  EXPECT_LT(one.space().size(), product(one).size());
  for (const auto& p : one.space()) EXPECT_LE(p["VEC"] * p["CACHE"], 64) << p.text();
}

TEST(GroupNormParams, ParsePointOverridesDefaults) {
  GroupNormFamily fam;
  const VariantDef& one = fam.variant("one_pass");
  ParamPoint p = one.parsePoint("WG=64,VEC=2");
  EXPECT_EQ(p["WG"], 64);
  EXPECT_EQ(p["VEC"], 2);
  EXPECT_EQ(p["CACHE"], one.defaults()["CACHE"]);
  EXPECT_EQ(one.parsePoint("VEC=4,CACHE=16")["CACHE"], 16);  // 4 * 16 == 64: allowed
  const VariantDef& two = fam.variant("two_pass");
  ParamPoint q = two.parsePoint("SPLIT=1,NWG=64");
  EXPECT_EQ(q["SPLIT"], 1);
  EXPECT_EQ(q["NWG"], 64);
  EXPECT_EQ(q["WG"], two.defaults()["WG"]);
}

TEST(GroupNormParams, ParsePointUnknownParameter) {
  GroupNormFamily fam;
  std::string msg = sdspeed_test::errorMessage([&] { fam.variant("one_pass").parsePoint("BOGUS=1"); });
  EXPECT_NE(msg.find("unknown parameter 'BOGUS'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("one_pass"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CACHE"), std::string::npos) << "should list the known parameters: " << msg;
  // SPLIT belongs to two_pass only.
  msg = sdspeed_test::errorMessage([&] { fam.variant("one_pass").parsePoint("SPLIT=8"); });
  EXPECT_NE(msg.find("unknown parameter 'SPLIT'"), std::string::npos) << msg;
}

TEST(GroupNormParams, ParsePointValueNotInList) {
  GroupNormFamily fam;
  std::string msg = sdspeed_test::errorMessage([&] { fam.variant("one_pass").parsePoint("VEC=3"); });
  EXPECT_NE(msg.find("value 3 of VEC is not one of"), std::string::npos) << msg;
  std::string vals;  // the message lists the allowed values
  for (int x : fam.variant("one_pass").param("VEC")->values) vals += (vals.empty() ? "" : ", ") + std::to_string(x);
  EXPECT_NE(msg.find("{" + vals + "}"), std::string::npos) << msg;
  msg = sdspeed_test::errorMessage([&] { fam.variant("two_pass").parsePoint("WG=100"); });
  EXPECT_NE(msg.find("value 100 of WG"), std::string::npos) << msg;
  msg = sdspeed_test::errorMessage([&] { fam.variant("two_pass").parsePoint("WG=abc"); });
  EXPECT_NE(msg.find("bad value in 'WG=abc'"), std::string::npos) << msg;
  msg = sdspeed_test::errorMessage([&] { fam.variant("two_pass").parsePoint("WG=64x"); });
  EXPECT_NE(msg.find("bad value in 'WG=64x'"), std::string::npos) << msg;
  msg = sdspeed_test::errorMessage([&] { fam.variant("two_pass").parsePoint("WG"); });
  EXPECT_NE(msg.find("want NAME=VALUE"), std::string::npos) << msg;
}

TEST(GroupNormParams, ParsePointViolatingConstraint) {
  GroupNormFamily fam;
  const VariantDef& one = fam.variant("one_pass");
  std::string msg = sdspeed_test::errorMessage([&] { one.parsePoint("VEC=8,CACHE=16"); });
  EXPECT_NE(msg.find("impossible parameters"), std::string::npos) << msg;
  EXPECT_NE(msg.find("VEC * CACHE <= 64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("CACHE=16"), std::string::npos) << msg;
  EXPECT_NE(msg.find("VEC=8"), std::string::npos) << msg;
  // The same limit reached through the defaults: CACHE=10 with the default VEC=4 is fine,
  // VEC=8 with the default CACHE=8 is 64 and fine, VEC=8 with CACHE=10 is not.
  EXPECT_NO_THROW(one.parsePoint("CACHE=10"));
  EXPECT_NO_THROW(one.parsePoint("VEC=8"));
  EXPECT_THROW(one.parsePoint("VEC=8,CACHE=10"), Error);
  EXPECT_EQ(one.violatedConstraint(ParamPoint({{"WG", 256}, {"VEC", 8}, {"CACHE", 16}})),
            "VEC * CACHE <= 64");
}

TEST(GroupNormParams, DeviceLimits) {
  GroupNormFamily fam;
  const VariantDef& one = fam.variant("one_pass");
  DeviceInfo dev;
  dev.maxWorkGroupSize = 256;
  dev.localMemBytes = 64 * 1024;
  EXPECT_EQ(one.deviceLimitReason(one.parsePoint("WG=256"), dev), "");
  std::string why = one.deviceLimitReason(one.parsePoint("WG=512"), dev);
  EXPECT_NE(why.find("work-group of 512"), std::string::npos) << why;
  dev.maxWorkGroupSize = 4096;
  dev.localMemBytes = 1024;  // WG=1024 floats of local memory do not fit
  why = one.deviceLimitReason(one.parsePoint("WG=1024"), dev);
  EXPECT_NE(why.find("local memory"), std::string::npos) << why;
}

TEST(VariantDef, HandMadeSpace) {
  VariantDef v;
  v.name = "toy";
  v.params = {{"A", {2, 1, 3}, "a"}, {"B", {10, 20}, "b"}};
  v.constraints = {{"A * B <= 40", [](const ParamPoint& p) { return p["A"] * p["B"] <= 40; }}};
  EXPECT_EQ(v.defaults().text(), "A=2,B=10");
  std::set<std::string> got;
  for (const auto& p : v.space()) got.insert(p.text());
  EXPECT_EQ(got, (std::set<std::string>{"A=1,B=10", "A=1,B=20", "A=2,B=10", "A=2,B=20", "A=3,B=10"}));
  std::string msg = sdspeed_test::errorMessage([&] { v.parsePoint("A=3,B=20"); });
  EXPECT_NE(msg.find("violates A * B <= 40"), std::string::npos) << msg;
}

// Adreno-only paths (fp16 arithmetic, sub-groups) declare what they need; a device
// without it cannot run any point, and `check` turns the reason into a skipped line.
TEST(VariantDef, RequiredExtensionsAreCheckedAgainstTheDevice) {
  VariantDef v;
  v.name = "half_math";
  v.params = {{"A", {1}, "a"}};
  v.requiredExtensions = {"cl_khr_fp16", "cl_khr_subgroups"};
  DeviceInfo dev;
  dev.maxWorkGroupSize = 256;
  dev.extensions = "cl_khr_fp64 cl_khr_fp16_extra";  // a longer name is not the extension
  EXPECT_EQ(v.deviceLimitReason(v.defaults(), dev), "device lacks cl_khr_fp16");
  EXPECT_TRUE(samplePoints(v, dev, 2, 1).empty());
  dev.extensions = "cl_khr_fp64 cl_khr_fp16";
  EXPECT_EQ(v.deviceLimitReason(v.defaults(), dev), "device lacks cl_khr_subgroups");
  dev.subgroups = true;  // OpenCL 3.0: sub-groups as a device query, no extension name
  EXPECT_EQ(v.deviceLimitReason(v.defaults(), dev), "");
  EXPECT_EQ(samplePoints(v, dev, 2, 1).size(), 1u);
}

TEST(Check, LackedCapabilityOfAnUnsupportedReason) {
  EXPECT_EQ(lackedCapability("device lacks cl_khr_fp16"), "device lacks cl_khr_fp16");
  EXPECT_EQ(lackedCapability("x: device lacks image support (CL_DEVICE_IMAGE_SUPPORT)\nmore"),
            "device lacks image support (CL_DEVICE_IMAGE_SUPPORT)");
  EXPECT_EQ(lackedCapability("violates VEC*CACHE <= 64"), "");
  EXPECT_EQ(lackedCapability("work-group of 1024 exceeds the device maximum 256"), "");
}

TEST(Registry, FindFamily) {
  EXPECT_EQ(findFamily("groupnorm").name(), "groupnorm");
  EXPECT_FALSE(allFamilies().empty());
  std::string msg = sdspeed_test::errorMessage([] { findFamily("nosuch"); });
  EXPECT_NE(msg.find("unknown op 'nosuch'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("groupnorm"), std::string::npos) << "should list the known ops: " << msg;
  EXPECT_THROW(findFamily(""), Error);
  EXPECT_THROW(findFamily("GroupNorm"), Error);  // names are exact
}

// FLOP counts from each op's definition (kernels/family.h: the counting convention).
TEST(MinFlops, CountsFromTheOpDefinition) {
  const Family& gn = findFamily("groupnorm");
  // 2x32x4x4 = 1024 elements, 2 x 8 groups: 8 per element + 4 per group, + SiLU 4.
  EXPECT_DOUBLE_EQ(gn.minFlops(*gn.makeProblem({2, 32, 4, 4}, {{"g", "8"}})), 8.0 * 1024 + 4.0 * 16);
  EXPECT_DOUBLE_EQ(gn.minFlops(*gn.makeProblem({2, 32, 4, 4}, {{"g", "8"}, {"silu", "1"}})),
                   12.0 * 1024 + 4.0 * 16);
  EXPECT_DOUBLE_EQ(gn.minFlops(*gn.makeProblem({2, 32, 4, 4}, {{"g", "8"}, {"silu", "1"}, {"residual", "1"}})),
                   13.0 * 1024 + 4.0 * 16);
  const Family& ln = findFamily("layernorm");
  EXPECT_DOUBLE_EQ(ln.minFlops(*ln.makeProblem({2, 768, 1, 77}, {})), 8.0 * 2 * 768 * 77 + 4.0 * 2 * 77);
  const Family& sm = findFamily("softmax");
  EXPECT_DOUBLE_EQ(sm.minFlops(*sm.makeProblem({2, 77, 1, 256}, {})), 6.0 * 2 * 77 * 256 + 2.0 * 256);
  const Family& act = findFamily("activation");
  EXPECT_DOUBLE_EQ(act.minFlops(*act.makeProblem({2, 640, 1, 64}, {{"fn", "gelu"}})), 5.0 * 2 * 640 * 64);
  EXPECT_DOUBLE_EQ(act.minFlops(*act.makeProblem({2, 640, 1, 64}, {{"fn", "geglu"}})), 6.0 * 2 * 320 * 64);
  EXPECT_DOUBLE_EQ(act.minFlops(*act.makeProblem({1, 4, 1, 2}, {{"fn", "silu"}})), 4.0 * 8);
  const Family& att = findFamily("attention");
  // B*H = 16, S = 64, L = 77, D = 40: (4D + 6) per score.
  EXPECT_DOUBLE_EQ(att.minFlops(*att.makeProblem({2, 320, 1, 64}, {{"heads", "8"}, {"kv", "77"}})),
                   16.0 * 64 * 77 * 166);
  // Causal S = L = 4: 1 + 2 + 3 + 4 scores per head.
  EXPECT_DOUBLE_EQ(att.minFlops(*att.makeProblem({1, 16, 1, 4}, {{"heads", "2"}, {"causal", "1"}})),
                   2.0 * 10 * (4 * 8 + 6));
  // q, out: 2x320x64; k, v: 2x320x77 (f32); the unused mask placeholder is not counted.
  EXPECT_EQ(att.minBytes(*att.makeProblem({2, 320, 1, 64}, {{"heads", "8"}, {"kv", "77"}}), StorageFormat{}),
            4u * 2 * 320 * (64 * 2 + 77 * 2));
  const Family& conv = findFamily("conv");
  // 2x320x64x64 -> 320, 3x3: 2 * 2*320*64*64 * 320*9 FLOPs, + 1 per output for bias.
  const double out = 2.0 * 320 * 64 * 64;
  EXPECT_DOUBLE_EQ(conv.minFlops(*conv.makeProblem({2, 320, 64, 64}, {{"cout", "320"}})), out * (2.0 * 2880 + 1));
  // + temb + residual, no bias.
  EXPECT_DOUBLE_EQ(conv.minFlops(*conv.makeProblem({2, 320, 64, 64}, {{"bias", "0"}, {"temb", "1"}, {"residual", "1"}})),
                   out * (2.0 * 2880 + 2));
  // Stride 2: 32x32 outputs. 1x1 640 -> 1280 at 16x16.
  EXPECT_DOUBLE_EQ(conv.minFlops(*conv.makeProblem({2, 320, 64, 64}, {{"stride", "2"}, {"bias", "0"}})),
                   2.0 * 320 * 32 * 32 * 2.0 * 2880);
  EXPECT_DOUBLE_EQ(conv.minFlops(*conv.makeProblem({2, 640, 16, 16}, {{"cout", "1280"}, {"k", "1"}, {"bias", "0"}})),
                   2.0 * 1280 * 256 * 2.0 * 640);
  // x and y in f16, weight and bias in f32; the unused temb/residual placeholders not counted.
  EXPECT_EQ(conv.minBytes(*conv.makeProblem({2, 8, 4, 4}, {{"cout", "4"}}), StorageFormat::parse("f16.buffer.nchw")),
            2u * (2 * 8 * 16 + 2 * 4 * 16) + 4u * (4 * 8 * 9 + 4));
  const Family& gemm = findFamily("gemm");
  // 2x320x1x4096 -> 2560 with GEGLU: 2 M N K, the bias on each of the M N products,
  // 6 per output (M x 1280); w, bias and x, y once.
  const double M = 2.0 * 4096;
  const auto geglu = gemm.makeProblem({2, 320, 1, 4096}, {{"n", "2560"}, {"epilogue", "geglu"}});
  EXPECT_DOUBLE_EQ(gemm.minFlops(*geglu), 2 * M * 2560 * 320 + M * 2560 + 6 * M * 1280);
  EXPECT_EQ(gemm.minBytes(*geglu, StorageFormat{}), 4u * (2 * 320 * 4096 + 2560 * 320 + 2560 + 2 * 1280 * 4096));
  // No bias, residual: 2 M N K + 1 per output; f16 activations (x, residual, y) count 2 bytes.
  const auto res = gemm.makeProblem({1, 4, 1, 2}, {{"n", "3"}, {"bias", "0"}, {"residual", "1"}});
  EXPECT_DOUBLE_EQ(gemm.minFlops(*res), 2.0 * 2 * 3 * 4 + 2 * 3);
  EXPECT_EQ(gemm.minBytes(*res, StorageFormat::parse("f16.buffer.nchw")), 2u * (4 * 2 + 2 * 3 * 2) + 4u * 3 * 4);
  EXPECT_DOUBLE_EQ(gemm.minFlops(*gemm.makeProblem({1, 768, 1, 77}, {{"n", "3072"}, {"epilogue", "quick_gelu"}})),
                   2.0 * 77 * 3072 * 768 + 77.0 * 3072 + 4.0 * 77 * 3072);
  // Every family counts its FLOPs, except the pure data movement ones (0 is right there).
  const std::set<std::string> copies = {"upsample", "concat", "reshape"};
  for (const auto& f : allFamilies())
    for (const auto& p : f->checkProblems(false)) {
      if (copies.count(f->name())) EXPECT_EQ(f->minFlops(*p), 0) << p->text();
      else EXPECT_GT(f->minFlops(*p), 0) << p->text();
    }
}

TEST(GemmProblem, AttributesRoundTripAndBadOnesAreOneClearError) {
  const Family& gemm = findFamily("gemm");
  const auto p = gemm.makeProblem({2, 320, 1, 4096}, {{"n", "2560"}, {"epilogue", "geglu"}});
  EXPECT_EQ(p->text(), "gemm 2x320x1x4096 bias=1 epilogue=geglu n=2560 residual=0");
  EXPECT_EQ(gemm.makeProblem(p->shape(), p->attributes())->text(), p->text());
  EXPECT_EQ(gemm.shapes(*p).back(), (Shape{2, 1280, 1, 4096}));  // y: the n / 2 GEGLU outputs
  for (const std::map<std::string, std::string>& bad :
       {std::map<std::string, std::string>{{"epilogue", "none"}},  // n missing
        {{"n", "0"}},
        {{"n", "x"}},
        {{"n", "7"}, {"epilogue", "geglu"}},  // odd: no hidden/gate halves
        {{"n", "8"}, {"epilogue", "relu"}},
        {{"n", "8"}, {"bias", "2"}},
        {{"n", "8"}, {"transpose", "1"}}}) {
    std::string msg = sdspeed_test::errorMessage([&] { gemm.makeProblem({2, 320, 1, 64}, bad); });
    EXPECT_NE(msg.find("gemm"), std::string::npos) << msg;
  }
  EXPECT_NE(sdspeed_test::errorMessage([&] { gemm.makeProblem({2, 320, 1, 64}, {{"n", "8"}, {"transpose", "1"}}); })
                .find("unknown gemm attribute 'transpose'"),
            std::string::npos);
}

TEST(GemmParams, TiledSpaceIsAFewHundredPointsThatFitTheH200) {
  const VariantDef& t = findFamily("gemm").variant("tiled");
  const auto space = t.space();
  EXPECT_GT(space.size(), 100u);
  EXPECT_LT(space.size(), 500u);
  DeviceInfo h200;  // NVIDIA's OpenCL on an H200: 1024 work-items, 48 KiB local memory
  h200.maxWorkGroupSize = 1024;
  h200.localMemBytes = 48 * 1024;
  for (const auto& p : space) {
    EXPECT_EQ(t.deviceLimitReason(p, h200), "") << p.text();
    EXPECT_LE(GemmFamily::tiledLocalBytes(p, true), h200.localMemBytes) << p.text();
  }
  // A plausible fast point for a large GEGLU GEMM on it is in the space.
  EXPECT_NO_THROW(t.parsePoint("MWG=128,NWG=64,KWG=16,MWI=8,NWI=4,VEC=4,SB=1"));
  EXPECT_NO_THROW(t.parsePoint("MWG=128,NWG=128,KWG=16,MWI=8,NWI=8,VEC=4,SB=1"));
}

TEST(AttentionProblem, BadAttributesAreOneClearError) {
  const Family& att = findFamily("attention");
  EXPECT_THROW(att.makeProblem({2, 320, 1, 64}, {{"heads", "7"}}), Error);     // 320 % 7
  EXPECT_THROW(att.makeProblem({2, 320, 1, 64}, {{"causal", "2"}}), Error);
  EXPECT_THROW(att.makeProblem({2, 320, 1, 64}, {{"kv", "x"}}), Error);
  EXPECT_THROW(att.makeProblem({2, 320, 1, 64}, {{"dropout", "0.1"}}), Error);
  EXPECT_THROW(att.makeProblem({2, 320, 8, 8}, {{"heads", "8"}}), Error);      // not a token tensor
  const auto p = att.makeProblem({2, 320, 1, 64}, {{"heads", "8"}, {"kv", "77"}});
  EXPECT_EQ(p->text(), "attention 2x320x1x64 causal=0 heads=8 kv=77 mask=0");
  EXPECT_EQ(att.makeProblem(p->shape(), p->attributes())->text(), p->text());  // the text form round-trips
}

namespace sdspeed {
TEST(ConvProblem, AttributesRoundTripAndBadOnesAreOneClearError) {
  const Family& conv = findFamily("conv");
  const auto p = conv.makeProblem({2, 320, 64, 64}, {{"temb", "1"}});
  EXPECT_EQ(p->text(), "conv 2x320x64x64 bias=1 cout=320 k=3 pad=1 residual=0 stride=1 temb=1");
  EXPECT_EQ(conv.makeProblem(p->shape(), p->attributes())->text(), p->text());
  EXPECT_EQ(conv.makeProblem({2, 320, 64, 64}, {{"k", "1"}})->text(),
            "conv 2x320x64x64 bias=1 cout=320 k=1 pad=0 residual=0 stride=1 temb=0");
  EXPECT_THROW(conv.makeProblem({2, 320, 64, 64}, {{"k", "5"}}), Error);
  EXPECT_THROW(conv.makeProblem({2, 320, 64, 64}, {{"stride", "3"}}), Error);
  EXPECT_THROW(conv.makeProblem({2, 320, 64, 64}, {{"pad", "3"}}), Error);
  EXPECT_THROW(conv.makeProblem({2, 320, 64, 64}, {{"pad", "-1"}}), Error);
  EXPECT_THROW(conv.makeProblem({2, 320, 64, 64}, {{"cout", "0"}}), Error);
  EXPECT_THROW(conv.makeProblem({2, 320, 64, 64}, {{"temb", "2"}}), Error);
  EXPECT_THROW(conv.makeProblem({2, 320, 64, 64}, {{"groups", "2"}}), Error);
  EXPECT_THROW(conv.makeProblem({1, 4, 2, 2}, {{"pad", "0"}}), Error);  // smaller than the window
}

TEST(ConvProblem, VariantsSayWhatTheyCannotRun) {
  const Family& conv = findFamily("conv");
  DeviceInfo dev;
  dev.maxWorkGroupSize = 1024;
  dev.localMemBytes = 48 * 1024;
  dev.maxAllocBytes = size_t{1} << 32;
  dev.globalMemBytes = size_t{1} << 36;
  const auto s2 = conv.makeProblem({1, 8, 9, 9}, {{"stride", "2"}});
  const auto k1 = conv.makeProblem({1, 8, 9, 9}, {{"k", "1"}});
  const auto k3 = conv.makeProblem({1, 8, 9, 9}, {});
  dev.fp16 = true;  // the half twins (im2col_gemm_f16, conv1x1_f16), in their own arithmetic
  dev.extensions = "cl_khr_fp16";
  for (const auto& v : conv.variants()) {
    if (v.name == "coopmat_f16" || v.name == "winograd_f2x2_coopmat_f16") {
      const bool wino = v.name != "coopmat_f16";
      // Vulkan's alone (cooperative matrices), and there for every kernel, stride and pad.
      const StorageFormat f = StorageFormat{}.withArithmetic(DType::F16);
      EXPECT_EQ(conv.unsupportedReason(v, v.defaults(), *k3, f, dev),
                "conv coopmat_f16 has no opencl kernels (cooperative matrices are Vulkan's)")
          << v.name;
      DeviceInfo vk = dev;
      vk.api = "vulkan";
      vk.cooperativeMatrix = true;
      vk.subgroupSize = 32;
      vk.coopMat.push_back({"NV", 16, 16, 16, "f16", "f16", "f32", "f32", "subgroup"});
      // Winograd's: the 3x3 at stride 1 alone (Cin 8: whole 8-half chunks of U's rows).
      for (const auto* prob : {&s2, &k1, &k3})
        EXPECT_EQ(conv.unsupportedReason(v, v.defaults(), **prob, f, vk).empty(), !wino || prob == &k3)
            << v.name << " " << (*prob)->text();
      continue;
    }
    const bool wino = v.name.rfind("winograd", 0) == 0, is1x1 = baseVariantName(v) == "conv1x1";
    const StorageFormat f = StorageFormat{}.withArithmetic(v.arithmetic.front());
    EXPECT_EQ(conv.unsupportedReason(v, v.defaults(), *s2, f, dev).empty(), !wino && !is1x1) << v.name;
    EXPECT_EQ(conv.unsupportedReason(v, v.defaults(), *k1, f, dev).empty(), !wino) << v.name;
    EXPECT_EQ(conv.unsupportedReason(v, v.defaults(), *k3, f, dev).empty(), !is1x1) << v.name;
  }
}
}  // namespace sdspeed
