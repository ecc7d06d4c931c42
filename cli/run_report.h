// What `sdspeed run` reports: timing per component (text encoder, each UNet step,
// VAE decoder, total), memory (planned activations per strategy at batch 1 and at
// the run's batch, kernel scratch, weights, the high-water mark of everything
// allocated), which variant each op family ran with, and with --profile the per op
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
  DeviceInfo device;
  ExecOptions exec;
  uint64_t peakBytes = 0;
  double setupMs = 0;
  std::string dbPath;
  bool dbExists = false;
  const DiffusionResult* result = nullptr;
  std::vector<ComponentReport> components;

  // Per component memory and variant tallies (needs the pipeline's executors).
  void collect(SdPipeline& pipe);
  void print(std::ostream& os) const;
  nlohmann::json json() const;
  double deviceTotalMs() const;
};

}  // namespace sdspeed
