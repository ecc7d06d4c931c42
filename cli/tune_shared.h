// What `sdspeed tune`'s three forms share: one op (cmd_tune.cpp), a whole model under
// one budget (tune_model.cpp) and one shard per GPU of the host (tune_gpus.cpp).
#pragma once

#include <string>
#include <vector>

#include "cli/args.h"
#include "runtime/opencl/device.h"
#include "tuning/database.h"
#include "tuning/sweep_cache.h"

namespace sdspeed {

// Rebuilds the instance's entry from every `ok` row of the sweep cache measured on
// this device with this driver and kernel source (this run's or an earlier one's),
// and records the family's source hash in the database.
void rebuildEntry(TuningDatabase& db, const Family& fam, const OpInstance& inst, const SweepCache& cache,
                  const DeviceCaps& dev, const std::string& sourceHash);

// A positive number of --NAME (0 when absent); throws Error naming the flag.
double positiveNumber(const Args& args, const std::string& name);

// tune --model DIR without --op (tune_model.cpp).
int tuneModel(const Args& args);
// tune --device gpus: argv as given to tune (tune_gpus.cpp).
int tuneOnGpus(const std::vector<std::string>& argv, const Args& args);

}  // namespace sdspeed
