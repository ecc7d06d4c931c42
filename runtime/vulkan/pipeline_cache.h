// The on-disk pipeline cache: one file per pipeline, holding the driver's VkPipelineCache
// data for it, keyed like the OpenCL program cache (runtime/opencl/program_cache.h) by what
// changes the compiled code: the device (device, driver and pipeline-cache UUIDs, vendor
// and device IDs), the driver version, a hash of the SPIR-V, the pipeline layout and the
// specialization constants (the tuning parameters, as ncnn keys its cache by them).
//
// Files are written atomically (runtime/atomic_file.h) in the program cache's checked
// entry format (runtime/program_entry.h: magic, key hash, length, checksum). Before a
// byte reaches the driver, the entry and the VkPipelineCache header inside it (vendor,
// device, pipelineCacheUUID) are checked: a truncated, bit-flipped or foreign entry is
// reported in one warning line, deleted and rebuilt, never handed to the driver (drivers
// are meant to validate cache data; some crash instead, as OpenCL's do on binaries).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/vulkan/device_info.h"

namespace sdspeed::vk {

struct SpirvShader;

// A specialization constant: constant_id and its 32 bits (uint, int, float or bool).
struct SpecConstant {
  uint32_t id = 0;
  uint32_t bits = 0;
};
SpecConstant specU32(uint32_t id, uint32_t v);
SpecConstant specI32(uint32_t id, int32_t v);
SpecConstant specF32(uint32_t id, float v);

struct PipelineCacheStats {
  int diskHits = 0;   // a valid entry was found and given to the driver
  int misses = 0;     // no entry: built and stored
  int discarded = 0;  // a damaged entry was deleted (then counted as a miss)
};

class PipelineCache {
 public:
  // dir empty: no disk cache (every pipeline is built; nothing is written).
  explicit PipelineCache(std::string dir);

  // <dir>/vulkan-pipelines/, under the program cache's directory rule:
  // $SDSPEED_CACHE_DIR, else $XDG_CACHE_HOME/sdspeed, else ~/.cache/sdspeed.
  static std::string defaultDir();

  std::string keyFor(const VulkanDeviceInfo& dev, const SpirvShader& shader, uint32_t storageBuffers,
                     uint32_t pushConstantBytes, const std::vector<SpecConstant>& spec) const;
  std::string pathFor(const std::string& key) const;  // "" without a disk cache
  const std::string& dir() const { return dir_; }

  // The driver data stored under key, checked against key and device; "" when there is
  // no entry or it is unusable (then a warning, and the file is deleted). Never throws.
  std::string load(const std::string& key, const VulkanDeviceInfo& dev);
  // Stores data under key; a failed write only costs a rebuild next time. Never throws.
  void store(const std::string& key, const std::string& data);
  // The driver rejected data load() returned: warns and deletes the entry.
  void reject(const std::string& key, const std::string& why);

  PipelineCacheStats stats() const;

 private:
  void discard(const std::string& path, const std::string& why);
  std::string dir_;
  mutable std::mutex mu_;
  PipelineCacheStats stats_;
};

// The VkPipelineCacheHeaderVersionOne at the start of driver data, checked against the
// device: "" when it matches, else why not (e.g. "pipelineCacheUUID differs").
std::string checkPipelineCacheHeader(const std::string& data, const VulkanDeviceInfo& dev);

}  // namespace sdspeed::vk
