// VulkanDeviceInfo::report(): the rows `sdspeed devices` prints for a Vulkan device, here
// rather than in cli/ so the CLI only lays them out (cli/cmd_devices.cpp).
#include <sstream>

#include "runtime/vulkan/device_info.h"

namespace sdspeed::vk {
namespace {

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }
std::string kib(uint64_t bytes) { return std::to_string(bytes >> 10) + " KiB"; }
std::string hex(uint32_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}
std::string dims(const std::array<uint32_t, 3>& d) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> VulkanDeviceInfo::report() const {
  std::vector<std::pair<std::string, std::string>> r;
  r.emplace_back("vendor", vendor + " (" + hex(vendorId) + "), device " + hex(deviceId));
  r.emplace_back("driver", driverText());
  r.emplace_back("Vulkan", apiVersionText());
  r.emplace_back("device-local memory", mib(deviceLocalBytes) + " (max alloc " + mib(maxAllocationBytes) + ")");
  r.emplace_back("shared memory", kib(maxSharedMemoryBytes));
  r.emplace_back("max work-group", std::to_string(maxWorkGroupInvocations) + " (" + dims(maxWorkGroupSize) + ")");
  r.emplace_back("max work-groups", dims(maxWorkGroupCount));
  r.emplace_back("subgroups", std::to_string(subgroupSize) + (subgroupArithmetic ? " (arithmetic)" : ""));
  r.emplace_back("fp16 arithmetic", shaderFloat16 ? "yes (shaderFloat16)" : "no");
  r.emplace_back("16-bit storage", storageBuffer16BitAccess ? "yes" : "no");
  std::ostringstream period;
  period << timestampPeriodNs;
  r.emplace_back("timestamps", timestamps() ? std::to_string(timestampValidBits) + " bits, " + period.str() + " ns per tick"
                                            : "no (ops cannot be timed)");
  if (coopMat.empty()) r.emplace_back("cooperative matrix", "no");
  for (size_t i = 0; i < coopMat.size(); ++i) r.emplace_back(i == 0 ? "cooperative matrix" : "", coopMat[i].text());
  // What gemm coopmat_f16 needs beyond the shapes (runtime/vulkan/device.cpp enables both).
  if (hasExtension("VK_NV_cooperative_matrix"))
    r.emplace_back("coopmat NV features", std::string("cooperativeMatrix ") + (cooperativeMatrixNV ? "yes" : "no") +
                                              ", vulkanMemoryModel " + (vulkanMemoryModel ? "yes" : "no"));
  r.emplace_back("key", key());
  return r;
}

}  // namespace sdspeed::vk
