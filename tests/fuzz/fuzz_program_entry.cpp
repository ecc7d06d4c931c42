// libFuzzer target: the program cache's entry decoder (runtime/program_entry.h) on
// arbitrary bytes. It must never crash or read out of bounds; an entry it accepts must
// be exactly what encodeProgramEntry writes for that binary (so nothing damaged passes
// as valid), and any bytes encoded as a binary must decode back to themselves.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runtime/program_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string key = "00112233aabbccdd";  // the seeds are entries for this key
  const sdspeed::DecodedProgramEntry d = sdspeed::decodeProgramEntry(bytes, key);
  if (d.ok() && sdspeed::encodeProgramEntry(key, d.binary) != bytes) std::abort();
  if (!d.ok() && d.error.empty()) std::abort();
  if (size > 0) {
    const sdspeed::DecodedProgramEntry back = sdspeed::decodeProgramEntry(sdspeed::encodeProgramEntry(key, bytes), key);
    if (!back.ok() || back.binary != bytes) std::abort();
  }
  return 0;
}
