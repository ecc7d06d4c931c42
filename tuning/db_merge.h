// Joining what shards (tuning/shard.h) or separate machines measured:
//  - databases: every variant's fastest point per instance across the inputs, refusing
//    inputs of another device key, driver or kernel source (a family's source hash);
//  - sweep caches: the union of their rows (a measurement appearing twice, by
//    SweepRow::key(), is kept once: the first input's row).
// Outputs are canonical, whatever the inputs' order: database entries sorted by
// instance text, sweep rows by their key, so a merge of N shards can be compared with
// an unsharded run byte for byte where the measurements are the same, and merging a
// single file writes it in that canonical order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels/family.h"
#include "tuning/database.h"
#include "tuning/sweep_cache.h"

namespace sdspeed {

// Every parameter name of the family's variants, sorted: the sweep cache's columns.
std::vector<std::string> familyParamNames(const Family& fam);

// Throws Error naming the input file that cannot be read or that disagrees with the
// first input (device key, driver, a family's kernel source hash).
TuningDatabase mergeDatabases(const std::vector<std::string>& paths);

// Sweep caches grouped by what they record: "<device-key>/<op>" (the file's folder and
// its name up to the first dot, so results/sweeps/k/gemm.shard-2-of-4.csv joins
// results/sweeps/k/gemm.csv). Inputs are cache files or sweep folders (every *.csv
// below them). Throws Error naming a malformed file or a row of another family.
std::map<std::string, std::vector<SweepRow>> mergeSweeps(const std::vector<std::string>& inputs);
// Writes each group to OUT_DIR/<device-key>/<op>.csv, atomically; returns the paths.
std::vector<std::string> writeMergedSweeps(const std::map<std::string, std::vector<SweepRow>>& groups,
                                           const std::string& outDir);

// Differences between two runs that should have measured the same points: for
// databases the instances and the variants recorded per instance, for sweep caches the
// (instance, variant, params, status) rows. Times are not compared (two runs never
// time alike). Empty when they agree; else one line per difference.
std::vector<std::string> compareDatabases(const TuningDatabase& a, const TuningDatabase& b);
std::vector<std::string> compareSweepRows(const std::vector<SweepRow>& a, const std::vector<SweepRow>& b);

}  // namespace sdspeed
