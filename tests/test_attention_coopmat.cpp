// attention flash_coopmat_f16's declaration, device rule and shared memory
// (kernels/attention/attention_coopmat.cpp) on capability records made by hand: an H200-
// like NV list, lavapipe's (none) and OpenCL. The D = 512 head fits 48 KiB only with DO
// splitting O's columns.
#include <gtest/gtest.h>

#include <string>

#include "fake_vulkan_caps.h"
#include "kernels/attention/attention_family.h"
#include "kernels/registry.h"

using namespace sdspeed;

namespace {

DeviceCaps vulkan48k(bool coopmat) {
  DeviceCaps d = testing_caps::vulkanDevice();
  d.cooperativeMatrix = coopmat;
  if (coopmat)
    for (uint32_t n : {16u, 8u}) d.coopMat.push_back({"NV", 16, n, 16, "f16", "f16", "f32", "f32", "subgroup"});
  return d;
}

const VariantDef& coopmat() { return findFamily("attention").variant(AttentionFamily::kCoopMatVariant); }

}  // namespace

TEST(AttentionCoopMat, DeclaredAsAnF16ArithmeticVariant) {
  const VariantDef& v = coopmat();
  EXPECT_EQ(v.name, "flash_coopmat_f16");
  EXPECT_EQ(v.arithmetic, std::vector<DType>{DType::F16});
  for (const char* p : {"CM", "CN", "CK", "SG", "BC", "DC", "DO", "RT"}) EXPECT_NE(v.param(p), nullptr) << p;
  const Tolerance t = findFamily("attention").tolerance(v, DType::F32);
  EXPECT_DOUBLE_EQ(t.atol, 4e-3);  // its own (attention_coopmat.cpp), under flash_f16's 1e-2
  EXPECT_EQ(AttentionFamily::scratchBytes(v, static_cast<const AttentionProblem&>(
                                                 *AttentionFamily::problem(1, 1, 40, 64, 64))), 0u);
}

TEST(AttentionCoopMat, DeviceRuleReadsTheShapeList) {
  const VariantDef& v = coopmat();
  EXPECT_EQ(v.deviceLimitReason(v.defaults(), vulkan48k(false)), "device lacks cooperative matrices");
  EXPECT_EQ(v.deviceLimitReason(v.defaults(), vulkan48k(true)), "");
  DeviceCaps cl = vulkan48k(true);
  cl.api = "opencl";
  EXPECT_EQ(AttentionFamily::coopMatDeviceRule(v.defaults(), cl),
            "attention flash_coopmat_f16 has no opencl kernels (cooperative matrices are Vulkan's)");
  // CK = 8 with CN = 16: the list has 16x8x16 and 16x16x16 only.
  const ParamPoint ck8 = v.parsePoint("CK=8");
  EXPECT_NE(v.deviceLimitReason(ck8, vulkan48k(true)).find("device lacks cooperative-matrix shape"), std::string::npos);
  DeviceCaps wide = vulkan48k(true);
  wide.subgroupSize = 64;
  EXPECT_NE(v.deviceLimitReason(v.defaults(), wide).find("32-invocation subgroups"), std::string::npos);
}

// The head sizes SD 1.5 has (40, 80, 160 in the UNet, 512 in the VAE) at the defaults on a
// 48 KiB device: all but D = 512, whose O would need 32 accumulators per subgroup; the
// defaults fitted to it (DO = 128: O's columns in 4 work-groups, and one subgroup of rows
// for its 512-wide Q tile) run it.
TEST(AttentionCoopMat, SharedMemoryPerHeadSize) {
  const Family& fam = findFamily("attention");
  const VariantDef& v = coopmat();
  const DeviceCaps dev = vulkan48k(true);
  const StorageFormat f = StorageFormat{}.withArithmetic(DType::F16);
  for (int64_t d : {40, 80}) {
    const auto prob = AttentionFamily::problem(2, 8, d, 256, 256);
    EXPECT_EQ(fam.unsupportedReason(v, v.defaults(), *prob, f, dev), "") << d;
    EXPECT_EQ(v.defaultsFor(*prob), v.defaults()) << d;  // nothing to fit
  }
  // D = 160: K and V in buffers of their own take 51984 bytes at 64 rows of the whole
  // head; 64-column parts of it (45840 bytes) fit.
  const auto d160 = AttentionFamily::problem(2, 8, 160, 256, 256);
  EXPECT_EQ(fam.unsupportedReason(v, v.defaults(), *d160, f, dev),
            "flash_coopmat_f16 tiles need 51984 bytes of shared memory at D = 160, device has 49152");
  EXPECT_EQ(v.defaultsFor(*d160), v.parsePoint("DO=64"));
  EXPECT_EQ(AttentionFamily::coopMatLocalBytes(v.parsePoint("DO=64"), 160), 45840u);
  EXPECT_EQ(fam.unsupportedReason(v, v.defaultsFor(*d160), *d160, f, dev), "");
  const auto vae = AttentionFamily::problem(1, 1, 512, 4096, 4096);
  EXPECT_EQ(fam.unsupportedReason(v, v.defaults(), *vae, f, dev),
            "flash_coopmat_f16 needs 32 O accumulators per subgroup at D = 512, at most 16 (a DO splits the head)");
  // DO = 128 alone: Q's 64 x 520 halves take 66560 bytes by themselves.
  EXPECT_EQ(fam.unsupportedReason(v, v.parsePoint("DO=128"), *vae, f, dev),
            "flash_coopmat_f16 tiles need 94992 bytes of shared memory at D = 512, device has 49152");
  // Halving the rows: 32 of them still take 54160 bytes, 16 fit.
  EXPECT_GT(AttentionFamily::coopMatLocalBytes(v.parsePoint("DO=128,SG=2"), 512), 49152u);
  const ParamPoint fitted = v.defaultsFor(*vae);
  EXPECT_EQ(fitted, v.parsePoint("DO=128,SG=1"));
  EXPECT_EQ(fam.unsupportedReason(v, fitted, *vae, f, dev), "");
  // A point tuned at D = 80 with 64-key blocks, refitted for D = 512: at 16 rows its blocks
  // still take 50128 bytes, so they are halved too.
  // A D = 80 head with a borrowed 64-key block halves its rows, not its columns.
  EXPECT_EQ(v.fitPoint(v.parsePoint("BC=64"), *AttentionFamily::problem(2, 8, 80, 256, 256)), v.parsePoint("BC=64,SG=2"));
  const ParamPoint borrowed = v.fitPoint(v.parsePoint("BC=64"), *vae);
  EXPECT_EQ(borrowed, v.parsePoint("DO=128,SG=1,BC=32"));
  EXPECT_EQ(fam.unsupportedReason(v, borrowed, *vae, f, dev), "");
  // The bytes as attention_coopmat.comp declares them, at D = 40 and the defaults (BR = 64,
  // BC = 32, DQC = DOC = 48, K chunk 48): Qs, Ks, Vs, Ps (f16); Ss, Al, Pm (f32) and the
  // subgroups' rescale flags (16 bytes).
  EXPECT_EQ(AttentionFamily::coopMatLocalBytes(v.defaults(), 40),
            2u * (64 * 56 + 32 * 56 + 32 * 56 + 64 * 40) + 4u * (64 * 36 + 64 + 128 + 4));
  EXPECT_EQ(AttentionFamily::coopMatColumns(v.defaults(), 40), 48);  // D rounded up to CN
  EXPECT_EQ(AttentionFamily::coopMatColumns(v.parsePoint("DO=64"), 512), 64);
}
