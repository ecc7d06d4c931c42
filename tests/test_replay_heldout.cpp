// #23 item 5: the model-guided strategy's replay claim on held-out recordings. The six
// recordings in tests/data/sweeps/<device-key>/ chose the strategy's settings
// (tuning/strategy.cpp, tuning/surrogate.{h,cpp}); the ones in
// tests/data/sweeps/held-out/<device-key>/<name>.csv were recorded after those settings
// were last changed, at instances the six do not hold, and no setting was changed after
// them (held-out/README.md: commits, commands, dates). Any CSV put there is replayed, and
// the README must list exactly the files present, so it says which recordings are held
// out and none leaves silently. A held-out recording may miss the claim: the strategy is
// not re-tuned on it (that would make it one more tuning recording). The README then
// marks it "(claim missed" and says by how much, and the test checks that verdict against
// the measurement, both ways: an unmarked recording must meet the claim, a marked one
// must still miss it (the README stays true).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "replay_support.h"
#include "tuning/sweep_cache.h"

namespace sdspeed {
namespace {

const std::filesystem::path kSweeps = std::filesystem::path(SDSPEED_TEST_DATA) / "sweeps";

// The README's list items "- `<device-key>/<name>.csv`...": the recordings it calls held
// out, each true where the item marks the claim missed ("(claim missed").
std::map<std::string, bool> listedInReadme(const std::filesystem::path& readme) {
  std::ifstream in(readme);
  EXPECT_TRUE(in) << readme;
  std::map<std::string, bool> listed;
  const std::regex item("^- `([^`/]+/[^`/]+\\.csv)`( \\(claim missed)?");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, item)) listed[m[1]] = m[2].matched;
  return listed;
}

// The claim, as the issue states it: with 25% of the points, the model-guided strategy's
// best is within 5% of the exhaustive best (time <= 1.05 x best) in at least 18 of seeds
// 1-20, and that rate is above random search's exact probability; on spaces of at least
// 100 points.
TEST(Replay, ModelGuidedClaimOnHeldOutRecordings) {
  const std::filesystem::path root = kSweeps / "held-out";
  const auto files = recordingsUnder(root);
  const auto listed = listedInReadme(root / "README.md");
  std::set<std::string> present, named;
  for (const auto& f : files) present.insert(std::filesystem::relative(f, root).generic_string());
  for (const auto& [name, missed] : listed) named.insert(name);
  EXPECT_EQ(present, named) << "held-out/README.md must list every recording there";
  ASSERT_FALSE(files.empty());

  // The instances the settings were chosen on: a held-out one must be another shape or
  // family (on any device).
  std::set<std::string> tuned;
  for (const auto& f : recordingsUnder(kSweeps, {"leave-one-out", "held-out"})) {
    const SweepCache rec(f.string(), {}, /*readOnly=*/true);  // named: a temporary's rows() would dangle
    for (const auto& r : rec.rows()) tuned.insert(r.instance);
  }
  ASSERT_FALSE(tuned.empty());

  std::set<std::string> devices, families;
  size_t holds = 0;
  std::cout << "held out (recorded after the strategy's settings were fixed): " << files.size() << " recordings\n";
  for (const auto& path : files) {
    const std::string name = std::filesystem::relative(path, root).generic_string();
    ReplayOutcome r;
    ASSERT_NO_FATAL_FAILURE(replayRecording(path, r));
    std::cout << "  held out " << name << ": " << r.instance << ", " << r.points << " points, best " << r.best
              << " us, " << r.qualifying << " within 5%; within 5% at a 25% budget (" << r.budget << " points): model "
              << r.model << "/20, anneal " << r.anneal << "/20, random " << r.random << "/20, random's probability "
              << r.randomRate << "\n";
    RecordProperty("held-out " + name, std::to_string(r.model) + "/20 vs random's probability " +
                                           std::to_string(r.randomRate));
    EXPECT_EQ(tuned.count(r.instance), 0u) << name << " is an instance the strategy was tuned on";
    EXPECT_GE(r.points, 100u) << name;
    const bool meets = r.model >= 18 && r.model / 20.0 > r.randomRate;
    holds += meets;
    const auto verdict = listed.find(name);
    const bool markedMissed = verdict != listed.end() && verdict->second;
    EXPECT_EQ(meets, !markedMissed) << name << ": model " << r.model << "/20 against 18/20 and random's probability "
                                    << r.randomRate << (markedMissed ? ", marked missed in" : ", not marked missed in")
                                    << " held-out/README.md";
    devices.insert(path.parent_path().filename().string());
    families.insert(r.family);
  }
  std::cout << "the claim holds on " << holds << " of " << files.size() << " held-out recordings\n";
  std::cout << "held-out recordings cover " << families.size() << " families on " << devices.size() << " devices\n";
}

}  // namespace
}  // namespace sdspeed
