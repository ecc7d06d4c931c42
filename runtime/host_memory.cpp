#include "runtime/host_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace sdspeed {

HostMemory availableHostMemory() {
  HostMemory m;
  {
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line)) {
      unsigned long long kb = 0;
      if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kb) == 1) {
        m.bytes = static_cast<uint64_t>(kb) * 1024;
        m.what = "MemAvailable in /proc/meminfo";
        break;
      }
    }
  }
  rlimit lim{};
  if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    // Headroom under the limit: the limit minus the address space already mapped
    // (/proc/self/statm's first field, in pages).
    uint64_t used = 0;
    std::ifstream statm("/proc/self/statm");
    unsigned long long pages = 0;
    if (statm >> pages) used = static_cast<uint64_t>(pages) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t limit = static_cast<uint64_t>(lim.rlim_cur);
    const uint64_t headroom = limit > used ? limit - used : 0;
    if (m.bytes == 0 || headroom < m.bytes) {
      m.bytes = headroom;
      m.what = "the address-space limit (ulimit -v) less what is mapped";
    }
  }
  return m;
}

std::string bytesText(long double bytes) {
  char b[96];
  if (bytes >= 1e15L)
    std::snprintf(b, sizeof b, "%.3Lg bytes", bytes);
  else
    std::snprintf(b, sizeof b, "%.3Lf GB (%.1Lf MiB)", bytes * 1e-9L, bytes / 1048576.0L);
  return b;
}

}  // namespace sdspeed
