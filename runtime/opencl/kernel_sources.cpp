#include "runtime/opencl/kernel_sources.h"

#include <fstream>
#include <sstream>

#include "runtime/opencl/cl_error.h"

namespace sdspeed {

KernelSources::KernelSources(std::string directory) : dir_(std::move(directory)) {
  std::ifstream probe(dir_ + "/common/prelude.cl");
  if (!probe) throw Error("--kernel-dir '" + dir_ + "' is not a kernel tree (no common/prelude.cl in it)");
}

std::string KernelSources::get(const std::string& path) const {
  if (dir_.empty()) {
    for (const auto& s : embeddedKernelSources())
      if (s.path == path) return s.text;
    throw Error("no embedded kernel source '" + path + "'");
  }
  std::ifstream in(dir_ + "/" + path, std::ios::binary);
  if (!in) throw Error("cannot read kernel source '" + dir_ + "/" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace sdspeed
