#include "runtime/vulkan/pipeline_cache.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "runtime/hash.h"
#include "runtime/program_entry.h"
#include "runtime/vulkan/spirv.h"

namespace sdspeed::vk {

SpecConstant specU32(uint32_t id, uint32_t v) { return {id, v}; }
SpecConstant specI32(uint32_t id, int32_t v) { return {id, static_cast<uint32_t>(v)}; }
SpecConstant specF32(uint32_t id, float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return {id, bits};
}

PipelineCache::PipelineCache(std::string dir) : dir_(std::move(dir)) {}

std::string PipelineCache::defaultDir() {
  // The rule of ProgramCache::defaultCacheDir(), repeated: sdspeed_vulkan links no
  // OpenCL code, and the two caches share one directory.
  if (const char* d = std::getenv("SDSPEED_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/sdspeed";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/sdspeed";
  return {};
}

std::string PipelineCache::keyFor(const VulkanDeviceInfo& dev, const SpirvShader& shader, uint32_t storageBuffers,
                                  uint32_t pushConstantBytes, const std::vector<SpecConstant>& spec) const {
  auto bytes = [](const auto& a) { return std::string_view(reinterpret_cast<const char*>(a.data()), a.size()); };
  Fnv1a h;
  h.add("vulkan-pipeline-1")
      .add(bytes(dev.deviceUuid))
      .add(bytes(dev.driverUuid))
      .add(bytes(dev.pipelineCacheUuid))
      .add(std::to_string(dev.vendorId) + ":" + std::to_string(dev.deviceId))
      .add(std::to_string(dev.driverVersionRaw))
      .add(dev.driverInfo)
      .add(dev.name)
      .add(std::string_view(reinterpret_cast<const char*>(shader.words), shader.spirvBytes()))
      .add(std::to_string(storageBuffers) + "/" + std::to_string(pushConstantBytes));
  for (const auto& s : spec) h.add(std::to_string(s.id) + "=" + std::to_string(s.bits));
  return h.hex();
}

std::string PipelineCache::pathFor(const std::string& key) const {
  return dir_.empty() ? std::string() : dir_ + "/vulkan-pipelines/" + key + ".bin";
}

std::string checkPipelineCacheHeader(const std::string& data, const VulkanDeviceInfo& dev) {
  // VkPipelineCacheHeaderVersionOne: u32 headerSize, u32 headerVersion, u32 vendorID,
  // u32 deviceID, u8 pipelineCacheUUID[16]; written in the device's byte order.
  if (data.size() < 32) return "driver data shorter than its 32-byte header";
  uint32_t f[4];
  std::memcpy(f, data.data(), sizeof f);
  if (f[0] < 32 || f[0] > data.size()) return "header size " + std::to_string(f[0]) + " is wrong";
  if (f[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) return "header version " + std::to_string(f[1]) + " is unknown";
  if (f[2] != dev.vendorId || f[3] != dev.deviceId) return "written for another device";
  if (std::memcmp(data.data() + 16, dev.pipelineCacheUuid.data(), VK_UUID_SIZE) != 0)
    return "pipelineCacheUUID differs (another driver build)";
  return "";
}

void PipelineCache::discard(const std::string& path, const std::string& why) {
  std::cerr << "sdspeed: warning: Vulkan pipeline cache entry " << path << " is unusable (" << why
            << "); deleted, rebuilding\n";
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.discarded;
}

std::string PipelineCache::load(const std::string& key, const VulkanDeviceInfo& dev) {
  const std::string path = pathFor(key);
  std::string bytes;
  if (path.empty() || !readFile(path, bytes)) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.misses;
    return "";
  }
  DecodedProgramEntry entry = decodeProgramEntry(bytes, key);
  std::string why = entry.ok() ? checkPipelineCacheHeader(entry.binary, dev) : entry.error;
  if (!why.empty()) {
    discard(path, why);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.misses;
    return "";
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.diskHits;
  return std::move(entry.binary);
}

void PipelineCache::reject(const std::string& key, const std::string& why) {
  discard(pathFor(key), why);
  std::lock_guard<std::mutex> lock(mu_);
  --stats_.diskHits;
  ++stats_.misses;
}

void PipelineCache::store(const std::string& key, const std::string& data) {
  const std::string path = pathFor(key);
  if (path.empty() || data.empty()) return;
  try {
    writeFileAtomically(path, encodeProgramEntry(key, data));
  } catch (const Error&) {
    // A read-only or full cache directory must not fail the run; it only costs rebuilds.
  }
}

PipelineCacheStats PipelineCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace sdspeed::vk
