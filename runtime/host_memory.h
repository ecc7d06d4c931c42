// How much memory this process can still take from the host: the kernel's MemAvailable
// (/proc/meminfo), lowered to the headroom under an address-space limit (ulimit -v,
// RLIMIT_AS) when one is set. Read before large allocations so that an absurd request is
// one error line instead of a process the OOM killer ends (or, with ulimit -v, a driver
// that aborts when its malloc fails).
#pragma once

#include <cstdint>
#include <string>

namespace sdspeed {

struct HostMemory {
  uint64_t bytes = 0;  // 0: unknown (no /proc/meminfo and no limit): no check is made
  std::string what;    // where the figure came from, for error lines
};

HostMemory availableHostMemory();

// "1.23 GB (1173.0 MiB)"-style text for error lines: decimal GB and binary MiB, as the
// run report prints sizes; long double so absurd estimates (beyond 2^64) print too.
std::string bytesText(long double bytes);

}  // namespace sdspeed
