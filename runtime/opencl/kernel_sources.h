// Kernel source files: embedded in the binary at build time (cmake/EmbedKernels.cmake),
// or read from a directory given with --kernel-dir for development.
#pragma once

#include <string>
#include <vector>

namespace sdspeed {

struct EmbeddedSource {
  std::string path;  // relative to kernels/, e.g. "groupnorm/groupnorm.cl"
  std::string text;
};

// Defined in the generated embedded_kernels.cpp.
const std::vector<EmbeddedSource>& embeddedKernelSources();

class KernelSources {
 public:
  KernelSources() = default;  // embedded sources
  // Throws Error when the directory holds no kernel tree (no common/prelude.cl).
  explicit KernelSources(std::string directory);
  // Text of kernels/<path>; throws Error naming the path when it does not exist.
  std::string get(const std::string& path) const;
  const std::string& directory() const { return dir_; }

 private:
  std::string dir_;  // empty: embedded
};

}  // namespace sdspeed
