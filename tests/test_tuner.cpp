// The tuner on the device (PoCL in CI): every point's status is recorded, failures
// included, and a sweep killed at deterministic points (before a row, and in the
// middle of writing one) resumes without losing or corrupting a measured point.
#include <gtest/gtest.h>

#include "test_support.h"  // first: a private PoCL cache folder for this process

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "broken_groupnorm.h"
#include "runtime/atomic_file.h"
#include "tuning/sweep_cache.h"
#include "tuning/tuner.h"

namespace sdspeed {
namespace {

Context& ctx() {
  static Context c(selectDevice(listDevices(), ""), ContextOptions{});
  return c;
}

TEST(TunerStatus, EveryOutcomeIsRecordedWithItsStatus) {
  sdspeed_test::TempDir dir;
  BrokenGroupNorm fam;
  const OpInstance inst = OpInstance::of(fam, *fam.makeProblem(parseShape("1x6x5x7"), {{"g", "3"}}), StorageFormat{});
  const auto space = tuningSpace(fam, ctx().device());
  ASSERT_EQ(space.size(), 7u);  // BUG = 0, 1, 2, 3, 4, 5, 9
  SweepCache cache(dir.path() + "/sweep.csv", {"BUG", "WG"});
  TimingPolicy quick;
  quick.minTotalMs = 1;
  DeviceEvaluator eval(ctx(), fam, inst, space, cache, quick, 3);
  auto strategy = makeStrategy("exhaustive", space, space.size(), 1);
  SearchResult res = runSearch(space, *strategy, space.size(), 0, [&](size_t i, bool& r) { return eval(i, r); });
  std::map<std::string, SweepRow> byBug;
  const SweepCache reread(dir.path() + "/sweep.csv", {"BUG", "WG"}, /*readOnly=*/true);  // `cache` holds the lock
  for (const auto& r : reread.rows()) byBug[r.params] = r;
  ASSERT_EQ(byBug.size(), 7u) << "a point was dropped";
  EXPECT_EQ(byBug["BUG=0,WG=64"].status, Status::Ok);
  EXPECT_GT(byBug["BUG=0,WG=64"].medianUs, 0);
  EXPECT_EQ(byBug["BUG=4,WG=64"].status, Status::Ok);  // unwritten padding is harmless in NCHW
  for (const char* p : {"BUG=1,WG=64", "BUG=2,WG=64", "BUG=3,WG=64", "BUG=5,WG=64"}) {
    EXPECT_EQ(byBug[p].status, Status::Inaccurate) << p;
    EXPECT_FALSE(byBug[p].message.empty()) << p;
  }
  EXPECT_EQ(byBug["BUG=9,WG=64"].status, Status::BuildFailed);
  EXPECT_NE(byBug["BUG=9,WG=64"].message.find("deliberate build failure"), std::string::npos)
      << byBug["BUG=9,WG=64"].message;
  EXPECT_EQ(res.failed, 5);
  ASSERT_GE(res.bestIndex, 0);
  EXPECT_EQ(res.rows[static_cast<size_t>(res.bestIndex)].status, Status::Ok);
}

struct TuneRun {
  std::string out;
  int exitCode = -1;
  bool killed = false;
};

TuneRun runTune(const std::string& env, const std::string& dir) {
  const std::string cmd = env + " " + SDSPEED_BIN +
                          " tune --op groupnorm --shape 1x16x4x4 --attrs g=4 --strategy random --budget 6 --seed 5"
                          " --min-ms 1 --sweep-dir " + dir + "/sweeps --db-dir " + dir + "/tuned 2>&1";
  TuneRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.killed = (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
             (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGKILL);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string sweepFile(const std::string& dir) {
  for (const auto& d : std::filesystem::recursive_directory_iterator(dir + "/sweeps"))
    if (d.path().extension() == ".csv") return d.path().string();
  return {};
}

class TunerResume : public ::testing::TestWithParam<bool> {};  // param: killed mid-row

TEST_P(TunerResume, KilledSweepLosesNothingAndReadsNothingCorrupt) {
  sdspeed_test::TempDir dir;
  const std::string kill = std::string("SDSPEED_TEST_KILL_AT_ROW=4") + (GetParam() ? " SDSPEED_TEST_KILL_MIDROW=1" : "");
  TuneRun first = runTune(kill, dir.path());
  ASSERT_TRUE(first.killed) << "exit " << first.exitCode << "\n" << first.out;
  const std::string csv = sweepFile(dir.path());
  ASSERT_FALSE(csv.empty());
  std::string text;
  ASSERT_TRUE(readFile(csv, text));
  EXPECT_EQ(text.back() == '\n', !GetParam()) << "the mid-row kill should leave half a row";

  TuneRun second = runTune("", dir.path());
  EXPECT_EQ(second.exitCode, 0) << second.out;
  EXPECT_NE(second.out.find("3 measured, 3 reused"), std::string::npos) << second.out;
  if (GetParam()) {
    EXPECT_NE(second.out.find("dropped a half-written row"), std::string::npos) << second.out;
  }
  const SweepCache cache(csv, {"CACHE", "NWG", "SPLIT", "VEC", "WG"}, /*readOnly=*/true);  // a writer would hold the lock
  std::set<std::string> keys;
  for (const auto& r : cache.rows()) keys.insert(r.key());
  EXPECT_EQ(cache.rows().size(), 6u);
  EXPECT_EQ(keys.size(), 6u) << "a point was measured twice";
  for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/tuned"))
    EXPECT_EQ(e.path().extension(), ".yaml") << "temporary file left: " << e.path();

  TuneRun third = runTune("", dir.path());  // everything is cached now
  EXPECT_NE(third.out.find("0 measured, 6 reused"), std::string::npos) << third.out;
}

// Issue #19: two tunes at once. On different ops they share the device's database: each
// rereads it under a lock on the --db-dir folder before saving, so both ops' entries
// survive (before, the later save dropped the earlier one's). On the same op they would
// share a sweep cache: the second fails at once naming it and the holder's pid.
TEST(TuneCli, ConcurrentTunesKeepEveryEntryAndNeverShareASweepCache) {
  sdspeed_test::TempDir dir;
  const std::string base = std::string(SDSPEED_BIN) + " tune --strategy random --budget 2 --seed 1 --min-ms 1 --sweep-dir " +
                           dir.path() + "/sweeps --db-dir " + dir.path() + "/tuned";
  const std::string gn = base + " --op groupnorm --shape 1x8x4x4 --attrs g=4";
  const std::string ln = base + " --op layernorm --shape 1x8x1x5";
  // Both start before either saves (their first build takes longer than starting).
  const std::string both = "(" + gn + " >" + dir.path() + "/a.log 2>&1 & " + ln + " >" + dir.path() + "/b.log 2>&1; wait)";
  ASSERT_EQ(std::system(both.c_str()), 0);
  std::string db;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/tuned")) {
    EXPECT_EQ(e.path().extension(), ".yaml") << "file left: " << e.path();
    ASSERT_TRUE(readFile(e.path().string(), db));
  }
  EXPECT_NE(db.find("groupnorm"), std::string::npos) << db;
  EXPECT_NE(db.find("layernorm"), std::string::npos) << db;

  // The same op twice: the second fails naming the sweep cache, while the first holds it.
  // The first times each point for 500 ms (about 3 s in all): with warm program caches a
  // 6-point tune at --min-ms 1 ends in 0.15 s, before the second even starts.
  const std::string slow =
      gn + " --budget 6 --min-ms 500 >" + dir.path() + "/c.log 2>&1 & sleep 1; " + gn + " 2>&1 >/dev/null; wait";
  FILE* p = ::popen(slow.c_str(), "r");
  ASSERT_TRUE(p);
  std::string err;
  char buf[1024];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) err.append(buf, n);
  ::pclose(p);
  EXPECT_NE(err.find("groupnorm.csv is in use by another process (pid "), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(TuneCli, BadInputGivesOneErrorLine) {
  sdspeed_test::TempDir dir;
  const std::string bad = dir.path() + "/bad.yaml";
  writeFileAtomically(bad, "instances:\n  - {op: groupnorm, shape: 1x8x4x4, component: unet, count: many}\n");
  const std::string bad2 = dir.path() + "/bad2.yaml";  // an attribute its family refuses
  writeFileAtomically(bad2, "instances:\n  - {op: concat, shape: 1x4x2x2, attrs: {c2: 1000000000}, component: unet}\n");
  const std::string base = std::string(SDSPEED_BIN) + " tune --sweep-dir " + dir.path() + " --db-dir " + dir.path();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {" --op concat --shapes " + bad2, "shape set " + bad2 + ": concat 1x4x2x2: bad concat attribute c2=1000000000"},
      {" --op groupnorm --shape 1x8x4x4 --attrs g=4 --strategy greedy", "unknown strategy 'greedy'"},
      {" --op nosuch --shape 1x8x4x4", "unknown op 'nosuch'"},
      {" --op groupnorm --shapes " + bad, "line 2, key 'count'"},
      {" --op groupnorm --shape 1x8x4x4 --attrs g=3", "not divisible"},
      {" --op groupnorm --shape 1x8x4x4 --attrs g=4 --budget 0", "bad budget"},
      {" --op groupnorm --shape 1x8x4x4 --attrs g=4 --variant nosuch", "unknown variant 'nosuch'"},
  };
  for (const auto& [args, phrase] : cases) {
    FILE* p = ::popen((base + args + " 2>&1 >/dev/null").c_str(), "r");
    ASSERT_TRUE(p);
    std::string err;
    char buf[1024];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) err.append(buf, n);
    const int status = ::pclose(p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << args;
    EXPECT_NE(err.find(phrase), std::string::npos) << args << ": " << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << args << ": " << err;
  }
}

INSTANTIATE_TEST_SUITE_P(KillPoints, TunerResume, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "MidRow" : "BetweenRows"; });

}  // namespace
}  // namespace sdspeed
