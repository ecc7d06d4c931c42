// The harness must be able to fail: a GroupNorm kernel with deliberate bugs (tests/
// data/groupnorm_broken.cl) runs through the same checkCase as the real kernels,
// with the real GroupNorm problems, inputs, reference and tolerances. The correct
// build (BUG=0) must pass; each bug must be caught, and caught for the right reason.
#include <gtest/gtest.h>

#include "test_support.h"  // first: a private PoCL cache folder for this process

#include <fstream>
#include <sstream>

#include "broken_groupnorm.h"
#include "kernels/groupnorm/groupnorm_family.h"
#include "tuning/check.h"

namespace sdspeed {
namespace {

struct Outcome {
  int ok = 0, inaccurate = 0, unwritten = 0, overTolerance = 0, canary = 0, padding = 0, other = 0;
};

Outcome runBug(int bug, const StorageFormat& f) {
  static Context ctx(selectDevice(listDevices(), ""), ContextOptions{});
  BrokenGroupNorm fam;
  const VariantDef& v = fam.variants().front();
  const ParamPoint p = v.parsePoint("BUG=" + std::to_string(bug));
  Outcome o;
  uint64_t seed = 99;
  for (const auto& prob : fam.checkProblems(false)) {
    CheckResult r = checkCase(ctx, fam, v, p, *prob, f, ++seed);
    if (r.status == Status::Ok) ++o.ok;
    else if (r.status == Status::Inaccurate) ++o.inaccurate;
    else ADD_FAILURE() << statusName(r.status) << ": " << r.message, ++o.other;
    o.unwritten += r.cmp.nonFinite > 0;
    o.overTolerance += r.cmp.overTolerance > 0;
    o.canary += !r.canaryIntact;
    o.padding += r.badPadding > 0;
  }
  return o;
}

class BrokenKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(BrokenKernels, CorrectBuildPasses) {
  Outcome o = runBug(0, StorageFormat::parse(GetParam()));
  EXPECT_GT(o.ok, 0);
  EXPECT_EQ(o.inaccurate, 0);
}

TEST_P(BrokenKernels, SkippedTailIsCaughtAsUnwritten) {
  Outcome o = runBug(1, StorageFormat::parse(GetParam()));
  EXPECT_GT(o.inaccurate, 0);
  EXPECT_GT(o.unwritten, 0);  // the poisoned NaNs survive where the tail was skipped
}

TEST_P(BrokenKernels, WrongEpsIsCaughtAsInaccurate) {
  Outcome o = runBug(2, StorageFormat::parse(GetParam()));
  EXPECT_GT(o.overTolerance, 0);
  // In f32 every problem's output moves past tolerance; f16 output rounding can hide
  // the shift on the smallest-variance-effect problems.
  if (GetParam().rfind("f32", 0) == 0) {
    EXPECT_EQ(o.ok, 0);
  }
}

TEST_P(BrokenKernels, WritePastTheEndIsCaughtByTheCanary) {
  Outcome o = runBug(3, StorageFormat::parse(GetParam()));
  EXPECT_GT(o.canary, 0);
  EXPECT_EQ(o.canary, o.inaccurate);
}

TEST_P(BrokenKernels, UnwrittenPaddingIsCaught) {
  if (GetParam().find("nc4hw4") == std::string::npos) GTEST_SKIP() << "NCHW has no padding lanes";
  Outcome o = runBug(4, StorageFormat::parse(GetParam()));
  EXPECT_GT(o.padding, 0);  // the problems with C % 4 != 0 keep NaN in their pad lanes
  EXPECT_EQ(o.padding, o.inaccurate);
  EXPECT_EQ(o.unwritten, 0);  // every logical element is still right
}

TEST_P(BrokenKernels, MixedUpGroupsAreCaught) {
  Outcome o = runBug(5, StorageFormat::parse(GetParam()));
  EXPECT_GT(o.overTolerance, 0);
  EXPECT_EQ(o.ok, 0);  // each problem has groups of different mean and scale
}

INSTANTIATE_TEST_SUITE_P(Storage, BrokenKernels,
                         ::testing::Values("f32.buffer.nchw", "f16.buffer.nchw", "f32.buffer.nc4hw4"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = c == '.' ? '_' : c;
                           return s;
                         });

}  // namespace
}  // namespace sdspeed
