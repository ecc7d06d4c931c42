// libFuzzer target: the GGUF header parser (pipeline/gguf.h) on arbitrary bytes, and the
// reading of every tensor it accepts. Every input must either parse into tensors lying
// inside the file, whose values read without leaving it, or throw sdspeed::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "pipeline/gguf.h"
#include "runtime/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> file{reinterpret_cast<const std::byte*>(data), size};
  try {
    for (const auto& t : sdspeed::parseGguf(file, "fuzz")) {
      if (t.offset > size || t.bytes > size - t.offset) std::abort();
      try {
        (void)sdspeed::ggufTensorToFloat(file, t, "fuzz");
      } catch (const sdspeed::Error&) {  // a type it does not read
      }
    }
  } catch (const sdspeed::Error&) {
  }
  return 0;
}
