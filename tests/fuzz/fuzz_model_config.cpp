// libFuzzer target: the config.json readers (pipeline/model/model_config.cpp) on arbitrary
// file contents, as a UNet, a VAE and a text encoder config. What loads is checked by the
// memory estimate against a small machine (pipeline/run/memory_check.h, with the tiny-sd-a
// fixture's other two configs) and, when it fits, its graph is built at 16x16 latents: the
// estimate must keep the builders from absurd sizes. Every step must succeed or throw
// sdspeed::Error; any other exception (std::bad_alloc, std::length_error), a crash, a
// timeout or a sanitizer report is a bug.
#include "fuzz_scratch.h"
#include "pipeline/model/sd_graphs.h"
#include "pipeline/run/memory_check.h"
#include "runtime/error.h"

namespace {

const std::string kFixture = SDSPEED_FUZZ_FIXTURE_DIR;

// 64 MiB of host and device: enough for the fixture's graphs, far below what the builders
// would take for an absurd config.
sdspeed::MemoryCapacity small() {
  sdspeed::MemoryCapacity c;
  c.deviceBytes = 64ull << 20;
  c.device = "the fuzzer's device";
  c.host = {64ull << 20, "the fuzzer's limit"};
  return c;
}

sdspeed::FitRequest request() {
  sdspeed::FitRequest r;
  r.batch = 2;
  r.latentH = r.latentW = 16;
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sdspeed;
  static const ModelConfigs fixture{loadUNetConfig(kFixture + "/unet/config.json"),
                                    loadVaeConfig(kFixture + "/vae/config.json"),
                                    loadClipConfig(kFixture + "/text_encoder/config.json")};
  const std::string path = sdspeed_fuzz::writeScratch("config.json", data, size);
  for (int component = 0; component < 3; ++component) {
    try {
      ModelConfigs m = fixture;
      if (component == 0) m.unet = loadUNetConfig(path);
      if (component == 1) m.vae = loadVaeConfig(path);
      if (component == 2) m.clip = loadClipConfig(path);
      checkModelFits(m, request(), small());
      if (component == 0) (void)buildUNetGraph(m.unet, 2, 16, 16, m.clip.positions);
      if (component == 1) (void)buildVaeDecoderGraph(m.vae, 1, 16, 16);
      if (component == 2) (void)buildTextEncoderGraph(m.clip, 2, m.clip.positions, "text_model.");
    } catch (const Error&) {
    }
  }
  return 0;
}
