// libFuzzer target: the ablation file loader (pipeline/run/ablation.cpp) on arbitrary file
// contents. Every input must load or throw sdspeed::Error; any other exception, a crash or
// a sanitizer report is a bug.
#include "fuzz_scratch.h"
#include "pipeline/run/ablation.h"
#include "runtime/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = sdspeed_fuzz::writeScratch("ablation.yaml", data, size);
  try {
    (void)sdspeed::loadAblationPlan(path);
  } catch (const sdspeed::Error&) {
  }
  return 0;
}
