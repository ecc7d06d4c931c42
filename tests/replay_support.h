// The replay claim's measurement on one recorded exhaustive sweep (one instance per file,
// the family read from the rows), shared by the test over the recordings the model-guided
// strategy was tuned on (test_tuner_offline.cpp) and the one over the held-out recordings
// (test_replay_heldout.cpp), so both measure the claim the same way.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace sdspeed {

struct ReplayOutcome {
  std::string instance, family;
  size_t points = 0;      // the recording's points, all of them in the family's space
  size_t qualifying = 0;  // ok points within 5% of the recorded best
  size_t budget = 0;      // 25% of the points
  double best = 0;        // the recorded best median, us
  // Of seeds 1-20, the searches whose best point is within 5% of the recorded best.
  int model = 0, anneal = 0, random = 0;
  // Random search's exact probability of the same: drawing `budget` of N points without
  // replacement, q of them within 5%, 1 - C(N-q, budget) / C(N, budget). 20 seeds of it
  // spread too much (on the H200 GEMM recording, where the probability is 0.76, random
  // search reached 20 of seeds 1-20 and 66 of seeds 21-120).
  double randomRate = 0;
};

// Replays `file` with the model, anneal and random strategies at seeds 1-20, a quarter of
// the points each. Fatal gtest failures (callers wrap it in ASSERT_NO_FATAL_FAILURE) for
// an empty file, one of several instances or a point outside the family's space.
void replayRecording(const std::filesystem::path& file, ReplayOutcome& out);

// The .csv files under `root`, sorted, skipping the subfolders named in `skip`.
std::vector<std::filesystem::path> recordingsUnder(const std::filesystem::path& root,
                                                   const std::vector<std::string>& skip = {});

}  // namespace sdspeed
