// libFuzzer target: the shape-set loader (tuning/shape_set.cpp) on arbitrary file contents,
// and each loaded entry made into its family's problem as `tune --shapes` does. Every input
// must load or throw sdspeed::Error (the CLI's one error line); any other exception, a crash
// or a sanitizer report is a bug.
#include "fuzz_scratch.h"
#include "kernels/registry.h"
#include "runtime/error.h"
#include "tuning/shape_set.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = sdspeed_fuzz::writeScratch("shapes.yaml", data, size);
  try {
    for (const sdspeed::ShapeEntry& e : sdspeed::loadShapeSet(path)) {
      try {
        const sdspeed::Family& fam = sdspeed::findFamily(e.op);
        (void)fam.makeProblem(e.shape, e.attrs);
      } catch (const sdspeed::Error&) {
      }
    }
  } catch (const sdspeed::Error&) {
  }
  return 0;
}
