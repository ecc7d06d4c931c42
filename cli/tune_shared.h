// What `sdspeed tune`'s three forms share: one op (cmd_tune.cpp), a whole model under
// one budget (tune_model.cpp) and one shard per GPU of the host (tune_gpus.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/args.h"
#include "runtime/opencl/device.h"
#include "tuning/database.h"
#include "tuning/strategy.h"
#include "tuning/sweep_cache.h"
#include "tuning/tuner.h"

namespace sdspeed {

// Rebuilds the instance's entry from every `ok` row of the sweep cache measured on
// this device with this driver and kernel source (this run's or an earlier one's),
// and records the family's source hash in the database.
void rebuildEntry(TuningDatabase& db, const Family& fam, const OpInstance& inst, const SweepCache& cache,
                  const DeviceCaps& dev, const std::string& sourceHash);

// The candidate of `space` with this variant and parameters (`params` parsed by the
// variant: a hand-written database entry may order or omit keys), if the space has it.
std::optional<size_t> candidateIndex(const std::vector<Candidate>& space, const std::string& variant,
                                     const std::string& params);

// What timeRecordedPoints did, counted as runSearch counts its points.
struct RecordedFirst {
  int measured = 0, reused = 0, failed = 0;
  std::vector<size_t> indexes;  // the points timed, into the space (the entry's best first)
};
// Times, through `eval`, the points `db` records for `inst` (every variant's, whatever
// source they were tuned against) that are in `space`, before a search spends its budget:
// the rebuilt entry then holds the old winners re-timed, so a re-tune of few points cannot
// replace them with slower ones it happened to try.
RecordedFirst timeRecordedPoints(const TuningDatabase& db, const OpInstance& inst, const std::vector<Candidate>& space,
                                 DeviceEvaluator& eval);

// A positive number of --NAME (0 when absent); throws Error naming the flag.
double positiveNumber(const Args& args, const std::string& name);

// tune --model DIR without --op (tune_model.cpp).
int tuneModel(const Args& args);
// tune --device gpus: argv as given to tune (tune_gpus.cpp).
int tuneOnGpus(const std::vector<std::string>& argv, const Args& args);

}  // namespace sdspeed
