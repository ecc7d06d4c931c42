// Sizes as users write them on the command line and in ablation files.
#pragma once

#include <cstdint>
#include <string>

namespace sdspeed {

// "4.5GB" (10^9), "1GiB" (2^30), "1800MB", "512MiB", or bytes (the units the report
// prints); an Error naming `what` (e.g. "--memory-budget") otherwise.
uint64_t parseMemorySize(const std::string& what, const std::string& text);

}  // namespace sdspeed
