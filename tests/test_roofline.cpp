// `sdspeed roofline`'s measurement on the default device (PoCL in CI, small buffers):
// both kernels' results are checked inside measureCeilings, the rates are positive
// and finite, and the ceilings file round-trips; a malformed one names the file.
#include <gtest/gtest.h>

#include "test_support.h"  // first: a private PoCL cache folder for this process

#include <cmath>

#include "runtime/atomic_file.h"
#include "tuning/roofline.h"

namespace sdspeed {
namespace {

TEST(Roofline, MeasuresAndRoundTrips) {
  Context ctx(selectDevice(listDevices(), ""), ContextOptions{});
  TimingPolicy quick;
  quick.minTotalMs = 5;
  const Ceilings c = measureCeilings(ctx, 4 << 20, quick);
  EXPECT_TRUE(std::isfinite(c.copyGBs) && c.copyGBs > 0);
  EXPECT_TRUE(std::isfinite(c.fmaGflops) && c.fmaGflops > 0);
  EXPECT_EQ(c.copyBytes, size_t(4) << 20);
  sdspeed_test::TempDir dir;
  const std::string path = dir.path() + "/devices/" + c.deviceKey + ".yaml";
  saveCeilings(c, path);
  Ceilings back;
  ASSERT_TRUE(loadCeilings(path, back));
  EXPECT_EQ(back.deviceKey, c.deviceKey);
  EXPECT_NEAR(back.copyGBs, c.copyGBs, 1e-5 * c.copyGBs);
  EXPECT_NEAR(back.fmaGflops, c.fmaGflops, 1e-5 * c.fmaGflops);
  EXPECT_EQ(back.dispatchTimedUs, 0.0);  // OpenCL measures no dispatch costs: none written, none read
  // Vulkan's dispatch costs round-trip too (optional keys).
  Ceilings withDispatch = c;
  withDispatch.dispatchTimedUs = 7.5, withDispatch.dispatchBarrierUs = 4.25, withDispatch.dispatchFreeUs = 1.125;
  saveCeilings(withDispatch, path);
  ASSERT_TRUE(loadCeilings(path, back));
  EXPECT_EQ(back.dispatchTimedUs, 7.5);
  EXPECT_EQ(back.dispatchBarrierUs, 4.25);
  EXPECT_EQ(back.dispatchFreeUs, 1.125);
  EXPECT_FALSE(loadCeilings(dir.path() + "/absent.yaml", back));
  writeFileAtomically(path, "format: 1\ncopy_gb_per_s: fast\n");
  const std::string msg = sdspeed_test::errorMessage([&] { loadCeilings(path, back); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

// Both backends size their copy buffers this way: within the allocation limit, whole
// float4s, and a clear error rather than an empty buffer.
TEST(Roofline, CopyBytesClamp) {
  EXPECT_EQ(rooflineCopyBytes(4 << 20, uint64_t(1) << 30), size_t(4) << 20);
  EXPECT_EQ(rooflineCopyBytes(4 << 20, 1000), 992u);  // the limit, down to a multiple of 16
  EXPECT_EQ(rooflineCopyBytes(100, uint64_t(1) << 30), 96u);
  EXPECT_NE(sdspeed_test::errorMessage([] { rooflineCopyBytes(15, uint64_t(1) << 30); }).find("too small"),
            std::string::npos);
}

}  // namespace
}  // namespace sdspeed
