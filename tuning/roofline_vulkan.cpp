// The ceilings on Vulkan (roofline.comp): the same two measurements and checks as
// OpenCL's (roofline.cpp), timed by the same op-time definition (timestamp queries).
#include <algorithm>

#include "kernels/vulkan/vulkan_lowering.h"
#include "runtime/error.h"
#include "runtime/vulkan/buffer.h"
#include "tuning/roofline.h"

namespace sdspeed {

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
  return c;
}

}  // namespace sdspeed
