// libFuzzer target: the tuning database loader (tuning/database.cpp) on arbitrary file
// contents. Every input must load or throw sdspeed::Error (the CLI's one error line);
// any other exception, a crash or a sanitizer report is a bug. A loaded database must
// survive save and load again unchanged in size (what `tune` does with it).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/opencl/cl_error.h"
#include "tuning/database.h"

namespace {

// One file per fuzzing process, rewritten for each input (the loader reads a path).
const std::string& scratch(const char* name) {
  static const std::string dir = [] {
    std::string t = "/tmp/sdspeed-fuzz-db-XXXXXX";
    if (!::mkdtemp(t.data())) std::abort();
    static const std::string made = t;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(made, ec);
    });
    return t;
  }();
  static std::string paths[2];
  std::string& p = paths[name[0] == 'b'];
  if (p.empty()) p = dir + "/" + name;
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = scratch("pocl-cpu-5.yaml");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const sdspeed::TuningDatabase db = sdspeed::TuningDatabase::load(path, "pocl-cpu-5");
    const std::string& again = scratch("back.yaml");
    db.save(again);
    const sdspeed::TuningDatabase back = sdspeed::TuningDatabase::load(again);
    if (back.entries().size() != db.entries().size()) std::abort();
  } catch (const sdspeed::Error&) {
  }
  return 0;
}
