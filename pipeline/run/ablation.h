// `sdspeed ablate`: a cumulative list of configurations (configs/ablation/*.yaml), each
// row changing some of: activation fusion, the variants each family may use, the
// memory planner, the storage precision, the weight format, whether components are
// released after use; and what each row measured.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/backend.h"

namespace sdspeed {

struct AblationRow {
  std::string name;
  bool fused = true;
  std::string planner = "greedy-by-size";
  std::string precision = "f32";
  // The weight format, --weights' syntax ("f16", "f16,vae_decoder=f32"); empty: the
  // run's --weights (f32 by default).
  std::string weights;
  // What kernels compute in ("f32", "f16"); empty: the run's --arithmetic.
  std::string arithmetic;
  // The GPU API the row runs through ("opencl", "vulkan"); empty: the run's --backend.
  // Inherited like every key, so `backend: vulkan` on one row moves the rows after it.
  std::string backend;
  double maxAbs = 0;  // allowed |decoded - baseline decoded|
  // `release: true|false`: each component freed once its output exists (true) or all
  // kept resident (false); unset: the ablate command's choice (released, unless
  // --keep-resident). Inherited like every key.
  std::optional<bool> release;
  // `scratch: planned|own`, `derived_weights: resident|per-call`, `budget: SIZE|none`
  // (ExecOptions::planScratch, derivedWeightsPerCall, memoryBudget); unset: the command's.
  std::optional<bool> planScratch, derivedPerCall;
  std::optional<uint64_t> budget;
  // `context_ops: once|every-step` (ExecOptions::reuseSteadyOps: the UNet's text-context
  // ops run once per image, or every step); unset: the command's --context-ops.
  std::optional<bool> reuseContextOps;
  std::map<std::string, std::vector<std::string>> variants;
};

struct AblationPlan {
  std::string name, path;
  std::vector<AblationRow> rows;  // resolved: every row carries all its settings
};

// Reads the YAML; each row inherits the previous row's settings and overrides the
// keys it names (variants per family). Throws Error naming file, line and key of
// anything malformed, an unknown family or variant, planner, precision or weight format.
AblationPlan loadAblationPlan(const std::string& path);

// Why `row` cannot be measured on a backend, "" when it can: in some family, none of the
// variants the row adds (those not in `previous`'s list of that family; every listed
// one for the first row) can run there at all: not in the row's arithmetic, refused by
// the device rules at every parameter point ("gemm coopmat_f16: device lacks cooperative
// matrices"), or without kernels on the backend ("conv winograd_f2x2_3x3 has no vulkan
// kernels"). Such a row would otherwise run the previous row's variants under its own
// label; `ablate` prints it as skipped and measures nothing. `format`: the row's
// storage and arithmetic.
std::string ablationRowSkip(const AblationRow& row, const AblationRow* previous, Backend& be, const StorageFormat& format);

struct AblationMeasurement {
  AblationRow row;
  std::string weights;                     // the weight format the row ran, resolved (weightsSpecText)
  std::string arithmetic = "f32";          // what its kernels computed in
  std::string backend = "opencl";          // the API it ran through
  double unetMedianMs = 0, unetMinMs = 0;  // per UNet iteration (device time)
  double pipelineMs = 0;                   // text encoder + every UNet step + VAE decoder (device time)
  double wallMs = 0;
  uint64_t activationBytes = 0;            // planned (or allocated, without planner), all components
  uint64_t scratchBytes = 0, weightBytes = 0, peakBytes = 0;
  bool released = false;                   // the components were released after use
  bool planScratch = true, derivedPerCall = false;  // what the row ran with (row key or command)
  uint64_t budgetBytes = 0;                         // per component; 0: none
  bool reuseContextOps = true;                      // context_ops: once (true) or every-step
  uint64_t streamedBytes = 0;                       // weight bytes uploaded per run, all components
  std::vector<std::string> budgetChoices;           // "component: choice", what the budget forced
  double maxAbs = 0, psnrDb = 0;           // decoded image vs the first row's
  bool withinTolerance = true;
  std::map<std::string, int> variants;     // "family/variant" -> op count, all components
  int fallbacks = 0;                       // ops that ran a variant outside the row's lists (none could run them)
};

// PSNR in dB of two decoded images in [-1, 1] after diffusers' (x / 2 + 0.5).clamp(0, 1);
// infinity when identical.
double psnrDb(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace sdspeed
