#include "runtime/device_caps.h"

namespace sdspeed {

std::string CoopMatShape::text() const {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " + a + "*" + b + "+" + c + "->" +
         result + " (" + scope + ", " + extension + ")";
}

bool DeviceCaps::hasExtension(const std::string& ext) const {
  size_t pos = 0;
  while ((pos = extensions.find(ext, pos)) != std::string::npos) {
    size_t end = pos + ext.size();
    bool startOk = pos == 0 || extensions[pos - 1] == ' ';
    bool endOk = end == extensions.size() || extensions[end] == ' ';
    if (startOk && endOk) return true;
    pos = end;
  }
  return false;
}

std::string DeviceCaps::typeName() const {
  switch (type) {
    case DeviceType::Gpu: return "GPU";
    case DeviceType::Cpu: return "CPU";
    case DeviceType::Accelerator: return "accelerator";
    case DeviceType::Other: break;
  }
  return "other";
}

}  // namespace sdspeed
