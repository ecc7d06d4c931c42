#include "runtime/memory_size.h"

#include <stdexcept>
#include <utility>

#include "runtime/error.h"

namespace sdspeed {

uint64_t parseMemorySize(const std::string& what, const std::string& text) {
  // Decimal units are powers of 10 (GB = 10^9), binary ones of 2 (GiB = 2^30), as the
  // report prints them; a bare number is bytes.
  static const std::pair<const char*, double> units[] = {{"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0},
                                                         {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1.0}};
  double scale = 1.0;
  std::string number = text;
  for (const auto& [u, f] : units) {
    const std::string unit = u;
    if (text.size() > unit.size() && text.compare(text.size() - unit.size(), unit.size(), unit) == 0) {
      number = text.substr(0, text.size() - unit.size());
      scale = f;
      break;
    }
  }
  double value = 0;
  size_t used = 0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != number.size() || !(value > 0) || value * scale > 1e15)
    throw Error(what + " wants a size such as 4.5GB, 1GiB, 1800MB or bytes, got '" + text + "'");
  return static_cast<uint64_t>(value * scale);
}

}  // namespace sdspeed
