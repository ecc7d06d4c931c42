// The one kernel harness (after ggml's test-backend-ops): every family x variant x
// sampled parameter point x storage format, on the default OpenCL device (PoCL in
// CI), over the family's quick problem set. Each case runs tuning/check.h's
// checkCase: fresh random inputs, output poisoned with NaN, canary past the end,
// compared with the double-precision Eigen reference at the family's tolerance.
#include <gtest/gtest.h>

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
      for (size_t i = 0; i < points.size(); ++i)
        for (const auto& f : StorageFormat::all())
          cases.push_back({fam.get(), &v, points[i], static_cast<int>(i), f});
    }
  return cases;
}

class KernelHarness : public ::testing::TestWithParam<Case> {};

TEST_P(KernelHarness, MatchesReference) {
  const Case& c = GetParam();
  int ran = 0;
  uint64_t seed = 2024;
  for (const auto& prob : c.family->checkProblems(false)) {
    CheckResult r = checkCase(testContext(), *c.family, *c.variant, c.point, *prob, c.format, ++seed);
    SCOPED_TRACE(r.problem + " [" + r.params + "] " + r.storage);
    EXPECT_TRUE(r.passed()) << statusName(r.status) << ": " << r.message;
    if (r.status == Status::Ok) {
      ++ran;
      EXPECT_TRUE(r.canaryIntact);
      EXPECT_EQ(r.badPadding, 0u);
    }
  }
  if (ran == 0) GTEST_SKIP() << c.variant->name << " supports no problem in " << c.format.name() << " here";
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, KernelHarness, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           std::string s = c.family->name() + "_" + c.variant->name + "_p" +
                                           std::to_string(c.pointIndex) + "_" + c.format.name();
                           for (char& ch : s) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return s;
                         });

}  // namespace
}  // namespace sdspeed
