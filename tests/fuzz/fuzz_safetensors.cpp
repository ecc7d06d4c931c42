// libFuzzer target: the safetensors header parser on arbitrary bytes. Every input must
// either parse into an index whose tensors tile the data section, or throw sdspeed::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "pipeline/safetensors.h"
#include "runtime/opencl/cl_error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto index = sdspeed::parseSafetensors({reinterpret_cast<const std::byte*>(data), size}, "fuzz");
    size_t expected = 0;
    for (const auto& t : index.tensors) {
      if (t.begin != expected || t.end < t.begin) std::abort();
      if (static_cast<size_t>(t.numel()) * sdspeed::dtypeSize(t.dtype) != t.bytes()) std::abort();
      expected = t.end;
    }
    if (index.dataStart + expected != size) std::abort();
  } catch (const sdspeed::Error&) {
  }
  return 0;
}
