#include "runtime/device_key.h"

#include <cctype>
#include <filesystem>
#include <system_error>

#include "runtime/error.h"

namespace sdspeed {
namespace {

// The APIs sdspeed has backends for (or reserves a key word for).
constexpr const char* kApis[] = {"opencl", "vulkan"};

std::string firstWord(const std::string& key) { return key.substr(0, key.find('-')); }

bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

}  // namespace

std::string keyApi(const std::string& key) {
  const std::string w = firstWord(key);
  for (const char* api : kApis)
    if (w == api && key.size() > w.size()) return w;
  return "";
}

std::string migrateDeviceKey(const std::string& key) {
  if (key.empty() || !keyApi(key).empty()) return key;
  return "opencl-" + key;
}

std::string legacyDeviceKey(const std::string& key) {
  const std::string k = migrateDeviceKey(key);
  return keyApi(k) == "opencl" ? k.substr(7) : "";
}

std::string keyVendorPrefix(const std::string& key) {
  const std::string k = migrateDeviceKey(key);
  const size_t apiEnd = k.find('-');
  const size_t vendorEnd = k.find('-', apiEnd + 1);
  return vendorEnd == std::string::npos ? k + "-" : k.substr(0, vendorEnd + 1);
}

std::string resolveKeyedPath(const std::string& dir, const std::string& key, const std::string& suffix) {
  const std::string current = dir + "/" + migrateDeviceKey(key) + suffix;
  if (exists(current)) return current;
  const std::string legacy = legacyDeviceKey(key);
  if (!legacy.empty() && exists(dir + "/" + legacy + suffix)) return dir + "/" + legacy + suffix;
  return current;
}

bool migrateKeyedPath(const std::string& dir, const std::string& key, const std::string& suffix) {
  const std::string current = dir + "/" + migrateDeviceKey(key) + suffix;
  const std::string legacy = legacyDeviceKey(key);
  if (legacy.empty() || exists(current) || !exists(dir + "/" + legacy + suffix)) return false;
  std::error_code ec;
  std::filesystem::rename(dir + "/" + legacy + suffix, current, ec);
  if (ec) throw Error("cannot rename " + dir + "/" + legacy + suffix + " to " + current + " (device-key migration): " + ec.message());
  return true;
}

std::string deviceKeySlug(const std::string& s) {
  std::string out;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string makeDeviceKey(const std::string& api, const std::string& vendor, const std::string& device,
                          const std::string& driverMajor) {
  const std::string v = deviceKeySlug(vendor);
  std::string d = deviceKeySlug(device);
  if (!v.empty() && d.rfind(v + "-", 0) == 0) d = d.substr(v.size() + 1);
  return deviceKeySlug(api) + "-" + v + "-" + d + "-" + deviceKeySlug(driverMajor);
}

}  // namespace sdspeed
