#include "replay_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>

#include "kernels/registry.h"
#include "tuning/strategy.h"
#include "tuning/sweep_cache.h"
#include "tuning/tuner.h"

namespace sdspeed {

void replayRecording(const std::filesystem::path& file, ReplayOutcome& out) {
  // Replay has no device: the recording says what ran, so every limit is open.
  DeviceInfo any;
  any.type = DeviceType::Gpu;
  any.maxWorkGroupSize = SIZE_MAX;
  any.localMemBytes = UINT64_MAX;
  any.computeUnits = 8;
  // Read-only: a replay never rewrites (or locks) the checked-in recording.
  std::string firstInstance;
  {
    SweepCache probe(file.string(), {}, /*readOnly=*/true);
    ASSERT_FALSE(probe.rows().empty()) << file;
    firstInstance = probe.rows().front().instance;
  }
  const Family& fam = findFamily(firstInstance.substr(0, firstInstance.find(' ')));
  std::set<std::string> paramNames;
  for (const auto& v : fam.variants())
    for (const auto& p : v.params) paramNames.insert(p.name);
  SweepCache rec(file.string(), std::vector<std::string>(paramNames.begin(), paramNames.end()), /*readOnly=*/true);
  const std::string inst = rec.rows().front().instance;
  std::set<std::string> recorded;
  double best = INFINITY;
  for (const auto& r : rec.rows()) {
    ASSERT_EQ(r.instance, inst) << file << ": one instance per recording";
    recorded.insert(r.variant + " [" + r.params + "]");
    if (r.status == Status::Ok) best = std::min(best, r.medianUs);
  }
  std::vector<Candidate> space;
  for (auto& c : tuningSpace(fam, any))
    if (recorded.count(c.text())) space.push_back(c);
  // The recording is the whole space (no point of it missing from the family's).
  ASSERT_EQ(space.size(), recorded.size()) << file;
  const size_t budget = space.size() / 4;
  auto successes = [&](const std::string& strategy) {  // of seeds 1-20
    int ok = 0;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      auto st = makeStrategy(strategy, space, budget, seed);
      SearchResult res = runSearch(space, *st, budget, 0, replayEvaluator(rec.rows(), inst, space));
      EXPECT_LE(res.rows.size(), budget);
      ok += res.bestIndex >= 0 && res.rows[static_cast<size_t>(res.bestIndex)].medianUs <= 1.05 * best;
    }
    return ok;
  };
  size_t qualifying = 0;
  for (const auto& r : rec.rows()) qualifying += r.status == Status::Ok && r.medianUs <= 1.05 * best;
  double randomMiss = 1;
  for (size_t i = 0; i < budget; ++i)
    randomMiss *= static_cast<double>(space.size() - qualifying - std::min(i, space.size() - qualifying)) /
                  static_cast<double>(space.size() - i);
  out.instance = inst;
  out.family = fam.name();
  out.points = space.size();
  out.qualifying = qualifying;
  out.budget = budget;
  out.best = best;
  out.randomRate = 1 - randomMiss;
  out.model = successes("model");
  out.anneal = successes("anneal");
  out.random = successes("random");
}

std::vector<std::filesystem::path> recordingsUnder(const std::filesystem::path& root,
                                                   const std::vector<std::string>& skip) {
  std::vector<std::filesystem::path> files;
  for (auto it = std::filesystem::recursive_directory_iterator(root); it != std::filesystem::recursive_directory_iterator();
       ++it) {
    if (it->is_directory() && std::count(skip.begin(), skip.end(), it->path().filename().string()))
      it.disable_recursion_pending();
    else if (it->path().extension() == ".csv")
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace sdspeed
