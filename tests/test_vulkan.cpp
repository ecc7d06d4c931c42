// The Vulkan runtime (runtime/vulkan/) on the first Vulkan device: lavapipe in CI, under
// the Khronos validation layer (SDSPEED_VK_VALIDATION=1): every test fails when the layer
// reports an error, whatever the test checks besides. Without a Vulkan device the device
// tests skip, saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "runtime/atomic_file.h"
#include "runtime/device_key.h"
#include "runtime/program_entry.h"
#include "runtime/timing.h"
#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/device_info.h"
#include "runtime/vulkan/backend.h"
#include "runtime/vulkan/dispatch.h"
#include "runtime/vulkan/instance.h"
#include "runtime/vulkan/pipeline.h"
#include "runtime/vulkan/spirv.h"
#include "runtime/vulkan/vk_error.h"
#include "vulkan_device_fixture.h"

SDSPEED_SPIRV_SHADER(axpb_f32)
#if SDSPEED_GLSLC_STORAGE_16BIT
SDSPEED_SPIRV_SHADER(axpb_f16s)
#endif
#if SDSPEED_GLSLC_STORAGE_16BIT && SDSPEED_GLSLC_FLOAT16_ARITHMETIC
SDSPEED_SPIRV_SHADER(axpb_f16)
#endif

namespace sdspeed::vk {
namespace {

namespace fs = std::filesystem;

struct Push {  // the shader's push-constant block (std430: 4-byte members, no padding)
  uint32_t n;
  float a;
  float b;
};

// IEEE half <-> float for the f16-storage variants (round to nearest even).
uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (x < 0x38800000u)  // below f16's normal range: multiples of 2^-24
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(std::ldexp(std::fabs(f), 24))));
  const uint32_t rounded = x + 0xfffu + ((x >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

float fromHalf(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) return (sign ? -1.f : 1.f) * std::ldexp(static_cast<float>(m), -24);
  uint32_t x = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112) << 23) | (m << 13));
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

std::vector<float> inputs(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<int>((i * 7919) % 2001) - 1000) / 500.0f;
  return x;  // in [-2, 2], multiples of 1/500
}

class VulkanTest : public VulkanDeviceTest {
 protected:
  // y = a*x + b on the device for n elements with work-group size wg; y is poisoned
  // with NaN and followed by a canary that must survive.
  template <typename T>
  std::vector<T> runAxpb(const SpirvShader& shader, const std::vector<T>& x, float a, float b, uint32_t wg,
                         PipelineCache* cache = nullptr) {
    const uint32_t n = static_cast<uint32_t>(x.size());
    constexpr size_t kCanary = 64;
    Buffer bx(*device_, n * sizeof(T)), by(*device_, (n + kCanary) * sizeof(T));
    upload(*device_, bx, x.data(), n * sizeof(T));
    std::vector<uint8_t> poison((n + kCanary) * sizeof(T), 0xff);  // NaN in f32 and f16
    for (size_t i = n * sizeof(T); i < poison.size(); ++i) poison[i] = static_cast<uint8_t>(0xa5 ^ i);
    upload(*device_, by, poison.data(), poison.size());
    ComputePipeline pipeline(*device_, shader, 2, sizeof(Push), {specU32(0, wg)}, cache);
    OpRecorder rec(*device_);
    rec.begin();
    const Push push{n, a, b};
    rec.dispatch(pipeline, {&bx, &by}, &push, sizeof push, (n + wg - 1) / wg);
    const OpTiming t = rec.submit();
    EXPECT_EQ(t.dispatches.size(), 1u);
    std::vector<uint8_t> out(poison.size());
    download(*device_, by, out.data(), out.size());
    for (size_t i = n * sizeof(T); i < out.size(); ++i)
      if (out[i] != poison[i]) {
        ADD_FAILURE() << shader.name << " wg " << wg << " n " << n << ": canary byte " << i - n * sizeof(T)
                      << " past the end was overwritten";
        break;
      }
    std::vector<T> y(n);
    std::memcpy(y.data(), out.data(), n * sizeof(T));
    return y;
  }

};

TEST(VulkanKey, SameRuleAsOpenCL) {  // no device needed
  EXPECT_EQ(makeDeviceKey("vulkan", "nvidia", "NVIDIA H200", "580"), "vulkan-nvidia-h200-580");
  EXPECT_EQ(makeDeviceKey("opencl", "nvidia", "NVIDIA H200", "580"), "opencl-nvidia-h200-580");
  EXPECT_EQ(makeDeviceKey("vulkan", "amd", "AMD Radeon RX 7900 XTX (RADV NAVI31)", "23"),
            "vulkan-amd-radeon-rx-7900-xtx-radv-navi31-23");
  EXPECT_EQ(keyApi("vulkan-nvidia-h200-580"), "vulkan");
  EXPECT_EQ(legacyDeviceKey("vulkan-nvidia-h200-580"), "");
  EXPECT_EQ(keyVendorPrefix("vulkan-mesa-llvmpipe-22"), "vulkan-mesa-");
}

TEST_F(VulkanTest, EnumeratesAndSelects) {
  for (const auto& d : devices_) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.apiVersion, VK_API_VERSION_1_0);
    EXPECT_EQ(keyApi(d.key()), "vulkan") << d.key();
    EXPECT_EQ(d.key(), deviceKeySlug(d.key())) << "a key is [a-z0-9-] only";
    EXPECT_EQ(&selectVulkanDevice(devices_, d.selector()), &d);
    EXPECT_GT(d.maxWorkGroupInvocations, 0u);
    EXPECT_GT(d.maxSharedMemoryBytes, 0u);
    EXPECT_EQ(d.report().back(), std::make_pair(std::string("key"), d.key()));
    // The neutral record the families' device rules read carries the same facts.
    const DeviceCaps c = d.caps();
    EXPECT_EQ(c.api, "vulkan");
    EXPECT_EQ(c.isGpu(), d.isGpu());
    EXPECT_EQ(c.fp16, d.shaderFloat16);
    EXPECT_EQ(c.storage16, d.storageBuffer16BitAccess);
    EXPECT_EQ(c.maxWorkGroupSize, d.maxWorkGroupInvocations);
    EXPECT_EQ(c.localMemBytes, d.maxSharedMemoryBytes);
    EXPECT_EQ(c.cooperativeMatrix, !d.coopMat.empty());
    EXPECT_GT(c.maxAllocBytes, 0u);
    for (const auto& e : d.extensions) EXPECT_TRUE(c.hasExtension(e)) << e;
    std::cout << "  " << d.selector() << " " << d.name << " (" << d.typeName() << "), Vulkan " << d.apiVersionText()
              << ", driver " << d.driverText() << ", key " << d.key() << ", subgroup " << d.subgroupSize
              << ", f16 " << d.shaderFloat16 << ", 16-bit storage " << d.storageBuffer16BitAccess
              << ", timestamp bits " << d.timestampValidBits << " period " << d.timestampPeriodNs << " ns, "
              << d.coopMat.size() << " coopmat shapes\n";
  }
  EXPECT_EQ(selectVulkanDevice(devices_, std::to_string(devices_.size() - 1)).index,
            static_cast<int>(devices_.size()) - 1);
  EXPECT_EQ(&selectVulkanDevice(devices_, devices_[0].name.substr(0, 3)), &devices_[0]);
  for (const char* bad : {"vulkan:99", "99", "vulkan:", "no-such-device-name", "vulkan:-1"})
    EXPECT_THROW(selectVulkanDevice(devices_, bad), Error) << bad;
  if (info_.type == VK_PHYSICAL_DEVICE_TYPE_CPU && info_.name.rfind("llvmpipe", 0) == 0) {
    EXPECT_EQ(info_.key(), "vulkan-mesa-llvmpipe-" + info_.driverMajor());
  }
  // The caps carry the cooperative-matrix shapes the family rules choose from, and device
  // creation enables VK_NV_cooperative_matrix only where the device offers its features
  // (never on lavapipe) and this build's glslc compiled the NV shader.
  EXPECT_EQ(info_.caps().coopMat.size(), info_.coopMat.size());
  EXPECT_EQ(device_->cooperativeMatrixNVEnabled(),
            SDSPEED_GLSLC_NV_COOPERATIVE_MATRIX && info_.cooperativeMatrixNV && info_.vulkanMemoryModel);
  if (info_.coopMat.empty()) {
    EXPECT_FALSE(device_->cooperativeMatrixNVEnabled());
  }
}

// The counter the other tests rely on does count: a buffer with no usage bits is an
// error the layer reports (VUID-VkBufferCreateInfo-usage-requiredbitmask) and drivers
// accept harmlessly.
TEST_F(VulkanTest, ValidationLayerErrorsAreCounted) {
  ASSERT_TRUE(instance_->validation());
  VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  ci.size = 256;
  ci.usage = 0;
  VkBuffer b = VK_NULL_HANDLE;
  if (vkCreateBuffer(device_->handle(), &ci, nullptr, &b) == VK_SUCCESS) vkDestroyBuffer(device_->handle(), b, nullptr);
  EXPECT_GE(instance_->validationErrors(), 1);
  expectedValidationErrors_ = instance_->validationErrors();
}

TEST_F(VulkanTest, AxpbF32MatchesHost) {
  const float a = 1.75f, b = -0.5f;
  for (uint32_t wg : {1u, 32u, 64u, 256u}) {
    if (wg > info_.maxWorkGroupSize[0]) continue;
    for (size_t n : {size_t(1), size_t(1000), size_t(4099)}) {
      const auto x = inputs(n);
      const auto y = runAxpb(shaders::axpb_f32, x, a, b, wg);
      for (size_t i = 0; i < n; ++i) {
        // f32 a*x+b, contracted into an fma or not (SPIR-V allows both): within one
        // rounding of the product, half an ulp of |a*x| ~ 2^-24 relative.
        const float ref = a * x[i] + b;
        ASSERT_NEAR(y[i], ref, 1e-6f * (std::fabs(a * x[i]) + std::fabs(b)) + 1e-30f)
            << "wg " << wg << " n " << n << " i " << i;
      }
    }
  }
}

#if SDSPEED_GLSLC_STORAGE_16BIT
// f16 storage, f32 arithmetic: each output is the f32 result rounded once to f16.
TEST_F(VulkanTest, AxpbF16StorageMatchesHost) {
  if (!device_->storage16Enabled()) GTEST_SKIP() << info_.name << " lacks storageBuffer16BitAccess";
  const float a = 1.75f, b = -0.5f;
  const auto xf = inputs(3001);
  std::vector<uint16_t> x(xf.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = toHalf(xf[i]);
  const auto y = runAxpb(shaders::axpb_f16s, x, a, b, 64);
  for (size_t i = 0; i < x.size(); ++i) {
    const float ref = a * fromHalf(x[i]) + b;
    // One rounding to f16 (2^-11 relative), and the f32 step's fma-or-not below that.
    ASSERT_NEAR(fromHalf(y[i]), ref, std::ldexp(std::fabs(ref), -11) + 1e-6f) << "i " << i;
  }
}
#endif

#if SDSPEED_GLSLC_STORAGE_16BIT && SDSPEED_GLSLC_FLOAT16_ARITHMETIC
// f16 storage and f16 arithmetic (ncnn's sfp = afp = f16). Tolerance: a = 1.75 and
// b = -0.5 are exact in f16 and x is f16 already, so the only errors are the rounding of
// a*x to f16 and of the sum to f16 (or one rounding when the driver fuses them or
// computes in f32, as lavapipe does): at most 2^-11 * |a*x| + 2^-11 * |y|, plus the f16
// subnormal spacing 2^-24 for results near zero. A shader computing in a coarser type,
// or not at all, is off by far more.
TEST_F(VulkanTest, AxpbF16ArithmeticMatchesHost) {
  if (!device_->storage16Enabled() || !device_->float16Enabled())
    GTEST_SKIP() << info_.name << " lacks shaderFloat16 or storageBuffer16BitAccess";
  const float a = 1.75f, b = -0.5f;
  const auto xf = inputs(3001);
  std::vector<uint16_t> x(xf.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = toHalf(xf[i]);
  for (uint32_t wg : {32u, 128u}) {
    const auto y = runAxpb(shaders::axpb_f16, x, a, b, wg);
    for (size_t i = 0; i < x.size(); ++i) {
      const float ax = a * fromHalf(x[i]), ref = ax + b;
      const float tol = std::ldexp(std::fabs(ax), -11) + std::ldexp(std::fabs(ref), -11) + std::ldexp(1.0f, -24);
      ASSERT_NEAR(fromHalf(y[i]), ref, tol) << "wg " << wg << " i " << i;
    }
  }
}
#endif

// Three dependent dispatches (y = a*x+b, z = a*y+b, w = a*z+b) in one op: the barrier
// makes each see the previous one's output, and the timestamps are ordered and nonzero.
TEST_F(VulkanTest, TimestampsSpanTheOp) {
  const uint32_t n = 1 << 20, wg = 64;
  const float a = 0.5f, b = 1.0f;
  const auto x = inputs(n);
  Buffer b0(*device_, n * 4), b1(*device_, n * 4), b2(*device_, n * 4), b3(*device_, n * 4);
  upload(*device_, b0, x.data(), n * 4);
  ComputePipeline pipeline(*device_, shaders::axpb_f32, 2, sizeof(Push), {specU32(0, wg)});
  OpRecorder rec(*device_, 4);
  const Push push{n, a, b};
  uint64_t lastEnd = 0;
  for (int run = 0; run < 2; ++run) {  // the recorder is reused
    rec.begin();
    rec.dispatch(pipeline, {&b0, &b1}, &push, sizeof push, n / wg);
    rec.dispatch(pipeline, {&b1, &b2}, &push, sizeof push, n / wg);
    rec.dispatch(pipeline, {&b2, &b3}, &push, sizeof push, n / wg);
    const OpTiming t = rec.submit();
    ASSERT_EQ(t.dispatches.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_LT(t.dispatches[i].startNs, t.dispatches[i].endNs) << "dispatch " << i << " of 1M elements took no time";
      if (i > 0) {
        EXPECT_LE(t.dispatches[i - 1].startNs, t.dispatches[i].startNs) << i;
        EXPECT_LE(t.dispatches[i - 1].endNs, t.dispatches[i].endNs) << i;
      }
    }
    // One clock for the recorder's life (its first op's start is 0): the second run's
    // dispatches start after the first run's ended, so a span across ops means something.
    if (run == 0) EXPECT_EQ(t.dispatches[0].startNs, 0u);
    else EXPECT_GE(t.dispatches[0].startNs, lastEnd);
    lastEnd = t.dispatches[2].endNs;
    EXPECT_EQ(t.spanNs(), static_cast<double>(t.dispatches[2].endNs - t.dispatches[0].startNs));
    EXPECT_GT(t.spanNs(), 0.0);
    EXPECT_LT(t.spanNs(), 60e9) << "a span of a minute is a unit error";
  }
  std::vector<float> w(n);
  download(*device_, b3, w.data(), n * 4);
  for (uint32_t i = 0; i < n; i += 997) {
    const float ref = a * (a * (a * x[i] + b) + b) + b;
    ASSERT_NEAR(w[i], ref, 1e-5f) << "i " << i;
  }
}

// DispatchSync (what `sdspeed roofline` records its dispatch costs with): a dispatch
// recorded without timestamps reports none (started/ended false) and the op's span runs
// from the first stamped start to the last stamped end; one without the barrier still
// runs (independent dispatches into their own buffers); the chain with barriers computes
// the chain's result. The recorder records as before once the sync is reset.
TEST_F(VulkanTest, DispatchSyncLeavesOutTimestampsAndBarriers) {
  const uint32_t n = 4096, wg = 64;
  const float a = 0.5f, b = 1.0f;
  const auto x = inputs(n);
  Buffer b0(*device_, n * 4), b1(*device_, n * 4), b2(*device_, n * 4), b3(*device_, n * 4), b4(*device_, n * 4);
  upload(*device_, b0, x.data(), n * 4);
  ComputePipeline pipeline(*device_, shaders::axpb_f32, 2, sizeof(Push), {specU32(0, wg)});
  for (bool deferred : {false, true}) {
    OpRecorder rec(*device_, 8);
    rec.setDeferred(deferred);
    const Push push{n, a, b};
    rec.begin();
    rec.setSync({true, true, false});
    rec.dispatch(pipeline, {&b0, &b1}, &push, sizeof push, n / wg);
    rec.setSync({true, false, false});
    rec.dispatch(pipeline, {&b1, &b2}, &push, sizeof push, n / wg);
    rec.setSync({true, false, true});
    rec.dispatch(pipeline, {&b2, &b3}, &push, sizeof push, n / wg);
    rec.setSync({false, false, true});
    rec.dispatch(pipeline, {&b0, &b4}, &push, sizeof push, n / wg);  // independent of the chain
    rec.setSync({});
    OpTiming t = rec.submit();
    rec.flush();
    std::vector<DispatchTime> times = t.dispatches;
    for (const auto& [batch, i] : t.pending) times.push_back(batch->at(i));
    ASSERT_EQ(times.size(), 4u) << deferred;
    EXPECT_TRUE(times[0].started && !times[0].ended) << deferred;
    EXPECT_TRUE(!times[1].started && !times[1].ended && times[1].startNs == 0 && times[1].endNs == 0) << deferred;
    EXPECT_TRUE(!times[2].started && times[2].ended) << deferred;
    EXPECT_TRUE(!times[3].started && times[3].ended) << deferred;
    EXPECT_LT(times[0].startNs, times[2].endNs) << deferred;
    if (!deferred) {
      EXPECT_EQ(t.spanNs(), static_cast<double>(std::max(times[2].endNs, times[3].endNs) - times[0].startNs));
    }
    std::vector<float> w3(n), w4(n);
    download(*device_, b3, w3.data(), n * 4);
    download(*device_, b4, w4.data(), n * 4);
    for (uint32_t i = 0; i < n; i += 97) {
      ASSERT_NEAR(w3[i], a * (a * (a * x[i] + b) + b) + b, 1e-5f) << "i " << i << " deferred " << deferred;
      ASSERT_NEAR(w4[i], a * x[i] + b, 1e-5f) << "i " << i << " deferred " << deferred;
    }
    // Reset: the next op is stamped on both sides again.
    rec.begin();
    rec.dispatch(pipeline, {&b0, &b1}, &push, sizeof push, n / wg);
    t = rec.submit();
    rec.flush();
    const DispatchTime again = deferred ? t.pending.front().first->at(t.pending.front().second) : t.dispatches.front();
    EXPECT_TRUE(again.started && again.ended) << deferred;
    EXPECT_LE(again.startNs, again.endNs) << deferred;
  }
}

// Span-only recording (what a graph run without --profile asks for): inside the span
// dispatches keep their barriers (the chain's result is right) but carry no timestamps,
// except the span's first start and the end of each batch's last dispatch (batches run
// when full, when little room is left at an op's begin, and at a host transfer) and of
// the span's last one; afterwards dispatches are stamped again. The VkEvents of unstamped sides read UINT64_MAX / 0, so
// eventSpanNs over the span's first and last events is its whole length.
TEST_F(VulkanTest, SpanOnlyStampsTheSpansEnds) {
  const uint32_t n = 4096, wg = 64;
  const float a = 0.5f, b = 1.0f;
  const auto x = inputs(n);
  Buffer bx(*device_, n * 4), by(*device_, n * 4);
  upload(*device_, bx, x.data(), n * 4);
  ComputePipeline pipeline(*device_, shaders::axpb_f32, 2, sizeof(Push), {specU32(0, wg)});
  OpRecorder rec(*device_, 16);  // batches of at most 16: 40 ops take several, full ones among them
  rec.setDeferred(true);
  device_->setBeforeHostAccess([&] { rec.flush(); });
  const Push push{n, a, b};
  std::vector<std::pair<std::shared_ptr<DispatchBatch>, uint32_t>> all;
  rec.beginSpanOnly();
  const int steps = 40, kExtra = 19;  // op 7 (odd: its output is bx) runs 19 more in place
  for (int k = 0; k < steps; ++k) {
    rec.begin();
    rec.dispatch(pipeline, {k % 2 ? &by : &bx, k % 2 ? &bx : &by}, &push, sizeof push, n / wg);
    if (k == 7)  // an op longer than a batch: the recorder runs a full batch from inside it
      for (int e = 0; e < kExtra; ++e) rec.dispatch(pipeline, {&bx, &bx}, &push, sizeof push, n / wg);
    const OpTiming t = rec.submit();
    all.insert(all.end(), t.pending.begin(), t.pending.end());
    if (k == 2) {  // a host transfer runs the batch so far
      Buffer scratch(*device_, 64);
      const std::vector<float> zeros(16, 0.0f);
      upload(*device_, scratch, zeros.data(), 64);
    }
  }
  rec.endSpanOnly();
  rec.begin();
  rec.dispatch(pipeline, {&bx, &by}, &push, sizeof push, n / wg);  // after the span: x -> a x + b
  const OpTiming after = rec.submit();
  rec.flush();
  device_->setBeforeHostAccess(nullptr);
  ASSERT_EQ(all.size(), static_cast<size_t>(steps + kExtra));
  int batches = 1;
  for (size_t k = 0; k < all.size(); ++k) {
    const DispatchTime& t = all[k].first->at(all[k].second);
    const bool lastOfBatch = k + 1 == all.size() || all[k + 1].first != all[k].first;
    batches += lastOfBatch && k + 1 < all.size();
    EXPECT_EQ(t.started, k == 0) << k;
    EXPECT_EQ(t.ended, lastOfBatch) << k;
  }
  EXPECT_GE(batches, 3) << "the test no longer fills batches";
  const DispatchTime& last = all.back().first->at(all.back().second);
  const DispatchTime& first = all.front().first->at(all.front().second);
  EXPECT_LT(first.startNs, last.endNs);
  const OpEvents ends = {std::make_shared<VkEvent>(all.front().first, all.front().second),
                         std::make_shared<VkEvent>(all.back().first, all.back().second)};
  EXPECT_EQ(ends[1]->startNs(), UINT64_MAX);
  EXPECT_EQ(ends[0]->endNs(), 0u);
  EXPECT_EQ(eventSpanNs(ends), static_cast<double>(last.endNs - first.startNs));
  const DispatchTime& again = after.pending.front().first->at(after.pending.front().second);
  EXPECT_TRUE(again.started && again.ended);
  EXPECT_LE(last.endNs, again.startNs);
  // The chain ran in order: 40 steps alternating buffers (step 7 with its 19 more) end in
  // bx (even count), then bx -> by once more.
  std::vector<float> got(n);
  download(*device_, by, got.data(), n * 4);
  for (uint32_t i = 0; i < n; i += 331) {
    float ref = x[i];
    for (int k = 0; k < steps + kExtra + 1; ++k) ref = a * ref + b;
    ASSERT_NEAR(got[i], ref, 1e-5f * std::fabs(ref) + 1e-6f) << "i " << i;
  }
}

TEST_F(VulkanTest, BadInputIsAnError) {
  EXPECT_THROW(Buffer(*device_, 0), Error);
  Buffer small(*device_, 64);
  std::vector<uint8_t> bytes(128);
  EXPECT_THROW(upload(*device_, small, bytes.data(), 128), Error);
  EXPECT_THROW(upload(*device_, small, bytes.data(), 8, 60), Error);
  EXPECT_THROW(download(*device_, small, bytes.data(), 65), Error);
  EXPECT_THROW(ComputePipeline(*device_, shaders::axpb_f32, 2, 6), Error);  // not a multiple of 4
  EXPECT_THROW(ComputePipeline(*device_, shaders::axpb_f32, 2, sizeof(Push), {specU32(0, 64), specU32(0, 32)}), Error);
  ComputePipeline pipeline(*device_, shaders::axpb_f32, 2, sizeof(Push), {specU32(0, 64)});
  OpRecorder rec(*device_, 1);
  const Push push{16, 1, 0};
  EXPECT_THROW(rec.dispatch(pipeline, {&small, &small}, &push, sizeof push, 1), Error);  // no begin()
  rec.begin();
  EXPECT_THROW(rec.dispatch(pipeline, {&small}, &push, sizeof push, 1), Error);
  EXPECT_THROW(rec.dispatch(pipeline, {&small, &small}, &push, 8, 1), Error);
  EXPECT_THROW(rec.dispatch(pipeline, {&small, &small}, &push, sizeof push, 0), Error);
  EXPECT_THROW(rec.dispatch(pipeline, {&small, &small}, &push, sizeof push, info_.maxWorkGroupCount[0] + 1u), Error);
  Buffer out(*device_, 64);
  rec.dispatch(pipeline, {&small, &out}, &push, sizeof push, 1);
  EXPECT_THROW(rec.dispatch(pipeline, {&small, &out}, &push, sizeof push, 1), Error);  // room for one
  EXPECT_EQ(rec.submit().dispatches.size(), 1u);
}

class VulkanCacheTest : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped()) return;
    dir_ = fs::path(::testing::TempDir()) / ("sdspeed-vk-cache-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
    VulkanTest::TearDown();
  }
  // A pipeline through a fresh cache object (as a new process would), then a dispatch
  // checking it computes.
  PipelineCacheStats create(uint32_t wg, std::string* key = nullptr) {
    PipelineCache cache(dir_.string());
    const auto x = inputs(300);
    const auto y = runAxpb(shaders::axpb_f32, x, 2.0f, 1.0f, wg, &cache);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], 2.0f * x[i] + 1.0f, 1e-5f);
    if (key) *key = cache.keyFor(info_, shaders::axpb_f32, 2, sizeof(Push), {specU32(0, wg)});
    return cache.stats();
  }
  std::string entryPath(const std::string& key) const { return (dir_ / "vulkan-pipelines" / (key + ".bin")).string(); }
  fs::path dir_;
};

TEST_F(VulkanCacheTest, SecondCreationHitsTheDiskCache) {
  std::string key;
  auto s = create(64, &key);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.diskHits, 0);
  ASSERT_TRUE(fs::exists(entryPath(key))) << entryPath(key);
  s = create(64);
  EXPECT_EQ(s.diskHits, 1);
  EXPECT_EQ(s.misses, 0);
  // Another specialization constant is another pipeline: another key, another file.
  std::string key32;
  s = create(32, &key32);
  EXPECT_NE(key32, key);
  EXPECT_EQ(s.misses, 1);
  EXPECT_TRUE(fs::exists(entryPath(key32)));
  // The entry holds the driver's VkPipelineCache data for this device.
  std::string bytes;
  ASSERT_TRUE(readFile(entryPath(key), bytes));
  const auto entry = decodeProgramEntry(bytes, key);
  ASSERT_TRUE(entry.ok()) << entry.error;
  EXPECT_EQ(checkPipelineCacheHeader(entry.binary, info_), "");
  std::cout << "  " << info_.name << ": " << entry.binary.size() << " bytes of VkPipelineCache data per pipeline\n";
}

TEST_F(VulkanCacheTest, DamagedEntriesAreRebuilt) {
  std::string key;
  create(64, &key);
  const std::string path = entryPath(key);
  std::string good;
  ASSERT_TRUE(readFile(path, good));
  const auto entry = decodeProgramEntry(good, key);
  ASSERT_TRUE(entry.ok());
  std::string foreign = entry.binary;  // a valid entry of another device's data
  foreign[8] ^= 0x01;                  // vendorID
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x40;
  const std::vector<std::pair<const char*, std::string>> damages = {
      {"truncated", good.substr(0, good.size() - 1)},
      {"header only", good.substr(0, kProgramEntryHeaderBytes)},
      {"empty", ""},
      {"bit flipped", flipped},
      {"garbage", std::string(4096, '\x5a')},
      {"another device's data", encodeProgramEntry(key, foreign)},
      {"another key's entry", encodeProgramEntry("0123456789abcdef", entry.binary)},
  };
  for (const auto& [what, bytes] : damages) {
    writeFileAtomically(path, bytes);
    testing::internal::CaptureStderr();
    const auto s = create(64);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(s.discarded, 1) << what;
    EXPECT_EQ(s.misses, 1) << what;
    EXPECT_NE(err.find("warning: Vulkan pipeline cache entry"), std::string::npos) << what << ": " << err;
    // Rebuilt and stored again: the next creation hits.
    EXPECT_EQ(create(64).diskHits, 1) << what;
  }
}

TEST_F(VulkanCacheTest, DumpWritesGlslAndSpirv) {
  PipelineCache cache(dir_.string());
  ComputePipeline pipeline(*device_, shaders::axpb_f32, 2, sizeof(Push), {specU32(0, 128)}, &cache);
  const fs::path out = dir_ / "dump";
  pipeline.dump(out.string());
  const std::string base = (out / (std::string("axpb_f32.") + pipeline.cacheKey())).string();
  std::string glsl, spv;
  ASSERT_TRUE(readFile(base + ".comp", glsl));
  ASSERT_TRUE(readFile(base + ".spv", spv));
  EXPECT_NE(glsl.find("void main"), std::string::npos);
  EXPECT_NE(glsl.find("specialization constants: 0=128"), std::string::npos) << glsl.substr(0, 300);
  ASSERT_EQ(spv.size(), shaders::axpb_f32.spirvBytes());
  uint32_t magic;
  std::memcpy(&magic, spv.data(), 4);
  EXPECT_EQ(magic, 0x07230203u);
}

// Deferred submission (what VulkanBackend runs with): ops of a chain y_{k+1} = a y_k + b
// across buffers pairs, more ops than one batch holds (4 dispatches), and a flush from
// inside an open op (the host-access hook's path: an upload between two dispatches). Every
// dispatch runs once, in order (the result is the chain's), events read after the
// recorder's batches ran share one clock and are ordered, and a buffer freed while
// dispatches are pending is flushed first through the device's hook.
TEST_F(VulkanTest, DeferredBatchesRunEveryDispatchInOrder) {
  const uint32_t n = 4096, wg = 64;
  const float a = 0.5f, b = 1.0f;
  const auto x = inputs(n);
  Buffer bx(*device_, n * 4), by(*device_, n * 4);
  upload(*device_, bx, x.data(), n * 4);
  ComputePipeline pipeline(*device_, shaders::axpb_f32, 2, sizeof(Push), {specU32(0, wg)});
  OpRecorder rec(*device_, 4);
  rec.setDeferred(true);
  device_->setBeforeHostAccess([&] { rec.flush(); });
  const Push push{n, a, b};
  std::vector<OpTiming> ops;
  const int steps = 11;  // > 2 batches of 4
  for (int k = 0; k < steps; ++k) {
    rec.begin();
    const Buffer* src = k % 2 ? &by : &bx;
    const Buffer* dst = k % 2 ? &bx : &by;
    rec.dispatch(pipeline, {src, dst}, &push, sizeof push, n / wg);
    if (k == 5) {
      // A host transfer inside the op runs the batch so far; the op goes on in a new one.
      Buffer scratch(*device_, 64);
      const std::vector<float> zeros(16, 0.0f);
      upload(*device_, scratch, zeros.data(), 64);
      rec.dispatch(pipeline, {dst, dst}, &push, sizeof push, n / wg);  // in place, once more
    }
    ops.push_back(rec.submit());
    EXPECT_TRUE(ops.back().dispatches.empty());  // deferred: times come from the batch
  }
  {
    Buffer dropped(*device_, 256);  // freed while dispatches are pending: the hook flushes
  }
  const Buffer& last = steps % 2 ? by : bx;
  std::vector<float> got(n);
  download(*device_, last, got.data(), n * 4);  // flushes the rest through the hook
  device_->setBeforeHostAccess(nullptr);
  for (uint32_t i = 0; i < n; i += 331) {
    float ref = x[i];
    for (int k = 0; k < steps; ++k) {
      ref = a * ref + b;
      if (k == 5) ref = a * ref + b;
    }
    ASSERT_NEAR(got[i], ref, 1e-5f * std::fabs(ref) + 1e-6f) << "i " << i;
  }
  uint64_t previousEnd = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    const auto events = ops[k].pending;
    ASSERT_EQ(events.size(), k == 5 ? 2u : 1u) << k;
    for (const auto& [batch, idx] : events) {
      const DispatchTime& t = batch->at(idx);
      EXPECT_LE(t.startNs, t.endNs) << k;
      EXPECT_GE(t.startNs + 1000, previousEnd) << "op " << k << " started before the previous one ended";
      previousEnd = t.endNs;
    }
  }
}

}  // namespace
}  // namespace sdspeed::vk
