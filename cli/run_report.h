// What `sdspeed run` reports: timing per component (text encoder, each UNet step,
// VAE decoder, total; per component load and warm-up apart), memory (planned
// activations per strategy at batch 1 and at the run's batch, kernel scratch, weights,
// each component's own device footprint, whether components were released or kept
// resident, the high-water mark of everything allocated), which variant each op
// family ran with, and with --profile the per op
// instance table; as a text table and as JSON with provenance.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "pipeline/run/sd_runner.h"

namespace sdspeed {

struct ComponentReport {
  std::string name;
  int nodes = 0;
  DType weights = DType::F32;                          // the component's weight format (--weights)
  ExecMemory memory;                                  // at the run's batch
  uint64_t deviceBytes = 0;                           // its own footprint (ComponentStats)
  VaeTiling tiling;                                   // vae_decoder: tiles and seams (ComponentStats)
  ComponentSetup setup;                               // this run's load / warm-up / release
  std::map<std::string, uint64_t> plansBatch1;        // in the run's format
  std::map<std::string, uint64_t> plansBatch1F16;     // half storage
  std::map<std::string, int> variants;                // "family/variant" -> op count
  std::map<std::string, int> sources;                 // where choices came from (exact, nearest, ...)
};

struct RunReport {
  std::string source, scheduler, image;
  bool randomWeights = false, seededTokens = false;
  int steps = 0;
  int64_t width = 0, height = 0, batch = 0;
  uint64_t seed = 0;
  DeviceCaps device;       // the backend's device (Backend::caps)
  std::string deviceKey;   // Backend::deviceKey
  std::string apiVersion;  // Backend::apiVersion
  ExecOptions exec;
  uint64_t peakBytes = 0;
  std::string dbPath;
  bool dbExists = false;
  const DiffusionResult* result = nullptr;
  std::vector<ComponentReport> components;

  // Per component memory, setup and variant tallies, from the pipeline's stats (kept
  // for released components) and the run's result (set result first).
  void collect(SdPipeline& pipe);
  void print(std::ostream& os) const;
  nlohmann::json json() const;
  double deviceTotalMs() const;
  double setupTotalMs() const;  // every component's load and warm-up
};

// One line naming, once, the points a run chose but could not run (the database's entry or
// a default refused by the family for this instance and device) and why, with how many ops
// each sent to a fallback variant; "" when none did. The report only counts them.
std::string fallbackNote(SdPipeline& pipe);

}  // namespace sdspeed
