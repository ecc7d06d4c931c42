// One sweep: a strategy walks the tuning space of one op instance within a budget;
// each point is evaluated on the device (build, check against the reference, time)
// or, in replay mode, looked up in a recorded sweep. Points already in the sweep
// cache are reused, not measured again, so a killed sweep resumes where it stopped.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/lowering.h"
#include "runtime/timing.h"
#include "tuning/op_instance.h"
#include "tuning/strategy.h"
#include "tuning/sweep_cache.h"

namespace sdspeed {

struct SearchResult {
  std::vector<SweepRow> rows;  // every evaluated point, in evaluation order
  int measured = 0;            // evaluated by this run
  int reused = 0;              // taken from the sweep cache
  int failed = 0;              // build_failed / run_failed / inaccurate
  size_t spaceSize = 0;
  long bestIndex = -1;         // into rows; -1 when nothing ran ok
};

using Evaluator = std::function<SweepRow(size_t index, bool& reused)>;
// Called after each point: (points done, budget, the row, the result so far).
using ProgressFn = std::function<void(size_t, size_t, const SweepRow&, const SearchResult&)>;

// Budget text: "" (the whole space), "N" (points) or "N%" (of the space). Throws Error.
size_t parseBudget(const std::string& text, size_t spaceSize);

SearchResult runSearch(const std::vector<Candidate>& space, Strategy& strategy, size_t budget,
                       double seconds, const Evaluator& evaluate, const ProgressFn& progress = {});

// Evaluates candidates of one op instance on ctx's device, through `cache`.
// Programs of the upcoming candidates are built ahead in parallel threads when the
// order is known (`prebuild`: exhaustive and random search; anneal and model choose
// each point from the last one's time, so their builds run as they go).
class DeviceEvaluator {
 public:
  DeviceEvaluator(Backend& ctx, const Family& fam, const OpInstance& instance, const std::vector<Candidate>& space,
                  SweepCache& cache, const TimingPolicy& policy, uint64_t seed);
  ~DeviceEvaluator();
  SweepRow operator()(size_t index, bool& reused);
  void prebuild(const std::vector<size_t>& order, int threads);

 private:
  SweepRow rowFor(const Candidate& c) const;  // identity and provenance, no result yet
  Backend& ctx_;
  const Family& fam_;
  OpInstance instance_;
  ProblemPtr problem_;
  const std::vector<Candidate>& space_;
  SweepCache& cache_;
  TimingPolicy policy_;
  uint64_t seed_;
  std::string sourceHash_;
  std::vector<std::thread> builders_;
  std::atomic<bool> stop_{false};
};

// Replay: costs from a recorded sweep (rows of `instance`); a point the recording
// lacks counts as unsupported.
Evaluator replayEvaluator(const std::vector<SweepRow>& recording, const std::string& instance,
                          const std::vector<Candidate>& space);

// The build provenance recorded with every measurement.
std::string sdspeedCommit();

}  // namespace sdspeed
