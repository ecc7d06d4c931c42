// The ceilings on Vulkan (roofline.comp): the same two measurements and checks as
// OpenCL's (roofline.cpp), timed by the same op-time definition (timestamp queries).
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"
#include "runtime/vulkan/buffer.h"
#include "runtime/vulkan/dispatch.h"
#include "tuning/roofline.h"

namespace sdspeed {
namespace {

struct DispatchCosts {
  double timedUs = 0, barrierUs = 0, freeUs = 0;
};

// The fixed cost of a dispatch: chains of kChain one-work-group copies of 1 KiB (each into
// its own slot of `out`, so that no dispatch depends on another), recorded three ways
// (DispatchSync): as ops are (a barrier and a timestamp pair each), with the barriers but
// timestamps only at the chain's ends, and with neither (the chain's first dispatch waits
// for earlier work, its last is timed). Each way's time per dispatch is the median over
// kRuns chains after kWarm; every slot is checked once at the end.
DispatchCosts measureDispatchCosts(vk::VulkanBackend& be, const vk::ComputePipeline& copy) {
  constexpr uint32_t kChain = 256, kWarm = 3, kRuns = 15, kQuads = 64;  // 64 vec4s: 1 KiB
  constexpr uint64_t kSlotBytes = kQuads * 16;
  vk::Device& d = be.device();
  const uint64_t stride = (kSlotBytes + be.subBufferAlignment() - 1) / be.subBufferAlignment() * be.subBufferAlignment();
  std::vector<float> host(kQuads * 4);
  for (size_t i = 0; i < host.size(); ++i) host[i] = 1.0f + static_cast<float>(i) / 1024.0f;
  vk::Buffer in(d, kSlotBytes), out(d, stride * kChain);
  vk::upload(d, in, host.data(), kSlotBytes);
  auto& rec = be.recorder();
  struct Restore {  // whatever happens, later ops are recorded as usual
    vk::OpRecorder& r;
    ~Restore() { r.setSync({}); }
  } restore{rec};
  auto chainUs = [&](bool barriers, bool stamps) {
    std::vector<double> us;
    for (uint32_t run = 0; run < kWarm + kRuns; ++run) {
      rec.flush();  // the chain alone in its batch
      rec.begin();
      const uint32_t n4 = kQuads;
      for (uint32_t i = 0; i < kChain; ++i) {
        vk::DispatchSync s;
        s.barrier = barriers || i == 0;
        s.startStamp = stamps || i == 0;
        s.endStamp = stamps || i + 1 == kChain;
        rec.setSync(s);
        rec.dispatch(copy, std::vector<vk::BufferRange>{{&in, 0, kSlotBytes}, {&out, i * stride, kSlotBytes}}, &n4, 4,
                     1);
      }
      rec.setSync({});
      const vk::OpTiming t = rec.submit();
      rec.flush();
      const auto& [firstBatch, firstIdx] = t.pending.front();
      const auto& [lastBatch, lastIdx] = t.pending.back();
      const double ns = static_cast<double>(lastBatch->at(lastIdx).endNs) - static_cast<double>(firstBatch->at(firstIdx).startNs);
      if (run >= kWarm) us.push_back(ns * 1e-3 / kChain);
    }
    return summarize(us).medianMs;  // a median of microseconds, whatever the field's name
  };
  DispatchCosts c;
  c.timedUs = chainUs(true, true);
  c.barrierUs = chainUs(true, false);
  c.freeUs = chainUs(false, false);
  std::vector<uint8_t> back(stride * kChain);
  vk::download(d, out, back.data(), back.size());
  for (uint32_t i = 0; i < kChain; ++i)
    if (std::memcmp(back.data() + i * stride, host.data(), kSlotBytes) != 0)
      throw Error("roofline: a dispatch of the chain copied wrong data (slot " + std::to_string(i) + ")");
  return c;
}

}  // namespace

Ceilings measureCeilingsVulkan(Backend& backend, size_t copyBytes, const TimingPolicy& policy) {
  auto* be = dynamic_cast<vk::VulkanBackend*>(&backend);
  if (!be) throw Error("roofline: a " + backend.api() + " backend given to the Vulkan ceilings");
  const DeviceCaps& dev = be->caps();
  Ceilings c{be->deviceKey(), dev.name, dev.driverVersion};
  const uint32_t wg = static_cast<uint32_t>(std::min<size_t>(256, dev.maxWorkGroupSize));
  const StorageFormat f32;
  vk::Device& d = be->device();

  copyBytes = rooflineCopyBytes(copyBytes, dev.maxAllocBytes);
  const uint32_t n4 = static_cast<uint32_t>(copyBytes / 16);
  const std::vector<float> host = rooflineCopyData(copyBytes);
  vk::Buffer in(d, copyBytes), out(d, copyBytes);
  vk::upload(d, in, host.data(), copyBytes);
  const auto& copy = be->pipeline(vulkanModuleFor("roofline_copy", f32), 2, 4, {vulkanLocalSizeX(*be, wg)});
  // A grid-stride loop: enough invocations to fill a GPU (Vulkan reports no core count).
  const uint32_t copyGroups = std::clamp<uint32_t>(n4 / wg, 1, 16384);
  auto& rec = be->recorder();
  TimingStats ts = timeOp(
      *be, 1,
      [&](int) {
        rec.begin();
        rec.dispatch(copy, {&in, &out}, &n4, 4, copyGroups);
        return vk::eventsOf(rec.submit());
      },
      policy);
  std::vector<float> back(host.size());
  vk::download(d, out, back.data(), copyBytes);
  if (back != host) throw Error("roofline: the copy shader produced wrong data");
  c.copyBytes = copyBytes;
  c.copyGBs = 2.0 * static_cast<double>(copyBytes) / (ts.medianMs * 1e6);

  // FMA: 2^20 invocations fill any GPU (the H200's 132 SMs hold 270k resident); a CPU
  // device (lavapipe) gets 2^14, enough for its cores and quick to check.
  const uint32_t items = dev.isCpu() ? (1u << 14) : (1u << 20);
  const int iters = 4096;
  const float a = 0.999f, b = 0.001f;
  vk::Buffer res(d, items * sizeof(float));
  const auto& fma = be->pipeline(vulkanModuleFor("roofline_fma", f32), 1, 12, {vulkanLocalSizeX(*be, wg)});
  struct {
    uint32_t iters;
    float a, b;
  } push{static_cast<uint32_t>(iters), a, b};
  TimingStats tf = timeOp(
      *be, 1,
      [&](int) {
        rec.begin();
        rec.dispatch(fma, {&res}, &push, sizeof(push), items / wg);
        return vk::eventsOf(rec.submit());
      },
      policy);
  std::vector<float> got(items);
  vk::download(d, res, got.data(), items * sizeof(float));
  checkRooflineFma(got, iters, a, b);
  c.fmaGflops = static_cast<double>(items) * iters * 8 * 2 / (tf.medianMs * 1e6);

  const DispatchCosts dc = measureDispatchCosts(*be, copy);
  c.dispatchTimedUs = dc.timedUs;
  c.dispatchBarrierUs = dc.barrierUs;
  c.dispatchFreeUs = dc.freeUs;
  return c;
}

}  // namespace sdspeed
