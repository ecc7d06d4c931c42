#include "runtime/device_key.h"
#include "tuning/roofline.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/family.h"
#include "runtime/atomic_file.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {

std::vector<float> rooflineCopyData(size_t copyBytes) {
  std::vector<float> host(copyBytes / 4);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> uni(1.0f, 2.0f);
  for (auto& v : host) v = uni(rng);
  return host;
}

size_t rooflineCopyBytes(size_t requested, uint64_t maxAllocBytes) {
  const size_t bytes = std::min<uint64_t>(requested, maxAllocBytes) / 16 * 16;
  if (bytes < 16) throw Error("roofline: copy buffer too small");
  return bytes;
}

void checkRooflineFma(const std::vector<float>& got, int iters, float a, float b) {
  for (size_t i : {size_t(0), got.size() / 2, got.size() - 1}) {
    const float seed = static_cast<float>(i & 1023) * 1e-3f;
    float sum = 0;
    for (int k = 0; k < 8; ++k) {
      float acc = seed + static_cast<float>(k) * 1e-4f;
      for (int j = 0; j < iters; ++j) acc = std::fma(acc, a, b);
      sum += acc;
    }
    if (std::abs(got[i] - sum) > 1e-4f * std::abs(sum))
      throw Error("roofline: the FMA kernel computed " + std::to_string(got[i]) + " at item " + std::to_string(i) +
                  ", expected " + std::to_string(sum));
  }
}

Ceilings measureCeilings(Backend& backend, size_t copyBytes, const TimingPolicy& policy) {
  if (auto* cl = dynamic_cast<Context*>(&backend)) return measureCeilingsCl(*cl, copyBytes, policy);
#if SDSPEED_WITH_VULKAN
  return measureCeilingsVulkan(backend, copyBytes, policy);
#else
  throw Error("roofline: no ceilings kernels for the " + backend.api() + " backend");
#endif
}

Ceilings measureCeilingsCl(Context& ctx, size_t copyBytes, const TimingPolicy& policy) {
  const DeviceInfo& dev = ctx.device();
  Ceilings c{dev.key(), dev.name, dev.driverVersion};
  ClBuiltProgram program;
  program.source = ctx.sources().get("roofline/roofline.cl");
  program.handle = ctx.programs().get("roofline", program.source, kBuildOptions);

  // Copy: two buffers of copyBytes (a multiple of 16), checked element for element.
  copyBytes = rooflineCopyBytes(copyBytes, dev.maxAllocBytes);
  const cl_int n4 = static_cast<cl_int>(copyBytes / 16);
  const std::vector<float> host = rooflineCopyData(copyBytes);
  ClMem in = ctx.createBuffer(copyBytes), out = ctx.createBuffer(copyBytes);
  ctx.writeBuffer(in.get(), host.data(), copyBytes);
  ClBoundKernel copy(ctx, program, "copy4");
  cl_mem outMem = out.get();
  copy.bind(KernelArgs().buffer("in", {in.get(), 0}).buffer("out", {outMem, 0}).i32("n", n4));
  const size_t wg = std::min<size_t>(256, dev.maxWorkGroupSize);
  // A grid-stride loop: enough work-items to fill the device, not one per element.
  const Launch cl = Launch::cover(1, {std::min<size_t>(n4, size_t(dev.computeUnits) * 2048), 1, 1}, {wg, 1, 1});
  TimingStats ts = timeOp(ctx, 1, [&](int) { OpEvents e; e.push_back(copy.launch(cl)); return e; }, policy);
  std::vector<float> back(host.size());
  ctx.readBuffer(outMem, back.data(), copyBytes);
  if (back != host) throw Error("roofline: the copy kernel produced wrong data");
  c.copyBytes = copyBytes;
  c.copyGBs = 2.0 * static_cast<double>(copyBytes) / (ts.medianMs * 1e6);

  // FMA: enough items to fill the device, checked against the same chain on the host.
  const size_t items = roundUp(size_t(dev.computeUnits) * 4096, wg);
  const cl_int iters = 4096;
  const cl_float a = 0.999f, b = 0.001f;
  ClMem res = ctx.createBuffer(items * sizeof(float));
  ClBoundKernel fmaK(ctx, program, "fma_chains");
  cl_mem resMem = res.get();
  fmaK.bind(KernelArgs().buffer("out", {resMem, 0}).i32("iters", iters).f32("a", a).f32("b", b));
  const Launch fl = Launch::cover(1, {items, 1, 1}, {wg, 1, 1});
  TimingStats tf = timeOp(ctx, 1, [&](int) { OpEvents e; e.push_back(fmaK.launch(fl)); return e; }, policy);
  std::vector<float> got(items);
  ctx.readBuffer(resMem, got.data(), items * sizeof(float));
  checkRooflineFma(got, iters, a, b);
  c.fmaGflops = static_cast<double>(items) * iters * 8 * 2 / (tf.medianMs * 1e6);
  return c;
}

void saveCeilings(const Ceilings& c, const std::string& path) {
  YAML::Emitter out;
  out.SetDoublePrecision(6);
  out << YAML::Comment("sdspeed device ceilings, measured by `sdspeed roofline`");
  out << YAML::BeginMap << YAML::Key << "format" << YAML::Value << 1;
  out << YAML::Key << "device" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "key" << YAML::Value
      << c.deviceKey << YAML::Key << "name" << YAML::Value << c.deviceName << YAML::Key << "driver" << YAML::Value
      << c.driver << YAML::EndMap;
  out << YAML::Key << "copy_gb_per_s" << YAML::Value << c.copyGBs;
  out << YAML::Key << "copy_buffer_bytes" << YAML::Value << c.copyBytes;
  out << YAML::Key << "fma_gflop_per_s" << YAML::Value << c.fmaGflops;
  if (c.dispatchTimedUs > 0)
    out << YAML::Key << "dispatch_us" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "timed"
        << YAML::Value << c.dispatchTimedUs << YAML::Key << "barrier" << YAML::Value << c.dispatchBarrierUs
        << YAML::Key << "free" << YAML::Value << c.dispatchFreeUs << YAML::EndMap;
  out << YAML::EndMap;
  writeFileAtomically(path, std::string(out.c_str()) + "\n");
}

bool loadCeilings(const std::string& path, Ceilings& c) {
  std::string text;
  if (!readFile(path, text)) return false;
  try {
    YAML::Node root = YAML::Load(text);
    c.deviceKey = migrateDeviceKey(root["device"]["key"].as<std::string>());
    c.deviceName = root["device"]["name"].as<std::string>();
    c.driver = root["device"]["driver"].as<std::string>();
    c.copyGBs = root["copy_gb_per_s"].as<double>();
    c.fmaGflops = root["fma_gflop_per_s"].as<double>();
    c.copyBytes = root["copy_buffer_bytes"].as<size_t>();
    c.dispatchTimedUs = c.dispatchBarrierUs = c.dispatchFreeUs = 0;
    if (const YAML::Node d = root["dispatch_us"]) {  // optional: Vulkan's
      c.dispatchTimedUs = d["timed"].as<double>();
      c.dispatchBarrierUs = d["barrier"].as<double>();
      c.dispatchFreeUs = d["free"].as<double>();
    }
  } catch (const YAML::Exception& e) {
    throw Error(path + " line " + std::to_string(e.mark.line + 1) + ": not a ceilings file: " + e.msg);
  }
  return true;
}

}  // namespace sdspeed
