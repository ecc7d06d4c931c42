// Device keys name the per-device files (configs/tuned/KEY.yaml, results/sweeps/KEY/,
// configs/devices/KEY.yaml, tests/data/sweeps/KEY/): API, vendor, device, driver major,
// e.g. "opencl-nvidia-h200-580", "vulkan-nvidia-h200-580", "opencl-pocl-cpu-3". The API
// comes first so that one GPU's OpenCL and Vulkan measurements never share a file, and a
// fallback that walks "the vendor's other databases" stays within one API.
//
// Migration rule (configs/tuned/FORMAT.md): a key whose first word is no API
// ("nvidia-h200-580") was written before sdspeed had a second API, when every key was
// OpenCL's; it reads as "opencl-" + key. Files under such names still load (the
// resolve* functions find them when the new name is absent), and `tune` renames them to
// the new name the first time it writes there.
#pragma once

#include <string>

namespace sdspeed {

// "opencl" or "vulkan" when the key's first word names an API, else "" (a legacy key).
std::string keyApi(const std::string& key);
// The key under the current rule: legacy keys gain "opencl-"; others are unchanged.
std::string migrateDeviceKey(const std::string& key);
// The legacy form of an OpenCL key ("opencl-nvidia-h200-580" -> "nvidia-h200-580"),
// empty for other APIs (they never had files without the API word).
std::string legacyDeviceKey(const std::string& key);
// "opencl-nvidia-" for "opencl-nvidia-h200-580": the API and vendor words, which the
// vendor-default fallback matches (migrated keys compared, so legacy files count).
std::string keyVendorPrefix(const std::string& key);

// dir/KEY + suffix ("dir/opencl-nvidia-h200-580.yaml"); when that does not exist and the
// legacy name does ("dir/nvidia-h200-580.yaml"), the legacy path. suffix may be empty
// (a folder per key, like results/sweeps/KEY).
std::string resolveKeyedPath(const std::string& dir, const std::string& key, const std::string& suffix);
// For writers: when dir/KEY + suffix is absent and the legacy name exists, renames the
// legacy file or folder to the new name (once) and returns true; otherwise false.
bool migrateKeyedPath(const std::string& dir, const std::string& key, const std::string& suffix);

// Building a key: lower case, [a-z0-9] runs joined by single '-' ("NVIDIA H200" -> "nvidia-h200").
std::string deviceKeySlug(const std::string& s);
// "API-VENDOR-DEVICE-DRIVER", each part slugged; a device name that starts with the vendor
// word loses it ("vulkan", "nvidia", "NVIDIA H200", "580" -> "vulkan-nvidia-h200-580"),
// the rule DeviceInfo::key() (runtime/opencl/device.h) applies to OpenCL devices, so one GPU's
// keys differ only in the API word when both drivers name it alike.
std::string makeDeviceKey(const std::string& api, const std::string& vendor, const std::string& device,
                          const std::string& driverMajor);

}  // namespace sdspeed
