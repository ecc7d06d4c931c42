// A scratch file per fuzzing process for loaders that read a path: rewritten with each
// input, removed (with its folder) at exit.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace sdspeed_fuzz {

inline std::string writeScratch(const std::string& name, const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    std::string t = "/tmp/sdspeed-fuzz-XXXXXX";
    if (!::mkdtemp(t.data())) std::abort();
    static const std::string made = t;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(made, ec);
    });
    return t;
  }();
  const std::string path = dir + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace sdspeed_fuzz
