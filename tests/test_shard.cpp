// Sharding and merging without a device (tuning/shard.h, tuning/db_merge.h,
// tuning/model_budget.h): the split is stable and complete, merges keep every
// variant's best and refuse other devices, drivers and kernel sources, and N shards
// replaying a recorded sweep (real H200 measurements, so every run "measures" the same
// times) merge into byte-for-byte the files of one unsharded run, for exhaustive search
// and for random search under a point budget with a fixed seed.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <numeric>
#include <set>

#include "kernels/registry.h"
#include "runtime/atomic_file.h"
#include "test_support.h"
#include "tuning/db_merge.h"
#include "tuning/model_budget.h"
#include "tuning/shard.h"
#include "tuning/tuner.h"

namespace sdspeed {
namespace {

using sdspeed_test::errorMessage;

const std::string kRecording = std::string(SDSPEED_TEST_DATA) + "/sweeps/leave-one-out/opencl-nvidia-h200-580/groupnorm.csv";

std::string slurp(const std::string& path) {
  std::string s;
  EXPECT_TRUE(readFile(path, s)) << path;
  return s;
}

TEST(Shard, ParsesKOfNAndRefusesTheRest) {
  EXPECT_EQ(parseShard("").n, 1);
  const Shard s = parseShard("2/5");
  EXPECT_EQ(s.k, 2);
  EXPECT_EQ(s.n, 5);
  EXPECT_EQ(s.suffix(), ".shard-2-of-5");
  EXPECT_EQ(shardPath("configs/tuned/pocl-cpu-3.yaml", s), "configs/tuned/pocl-cpu-3.shard-2-of-5.yaml");
  EXPECT_EQ(shardPath("r/sweeps/k.1/gemm.csv", s), "r/sweeps/k.1/gemm.shard-2-of-5.csv");
  EXPECT_EQ(shardPath("x/gemm.csv", parseShard("1/1")), "x/gemm.csv");
  for (const char* bad : {"0/2", "3/2", "1/0", "2", "a/b", "1/2x", "/2", "-1/2", "1/"})
    EXPECT_NE(errorMessage([&] { parseShard(bad); }).find("--shard wants K/N"), std::string::npos) << bad;
}

TEST(Shard, EveryInstanceFallsToExactlyOneShardWhateverTheList) {
  const SweepCache rec(kRecording, familyParamNames(findFamily("groupnorm")), true);
  std::set<std::string> instances;
  for (const auto& r : rec.rows()) instances.insert(r.instance);
  ASSERT_GE(instances.size(), 40u);
  for (int n : {2, 3, 7}) {
    std::vector<int> perShard(n + 1, 0);
    for (const auto& i : instances) {
      int owners = 0;
      for (int k = 1; k <= n; ++k) owners += Shard{k, n}.owns(i);
      EXPECT_EQ(owners, 1) << i;
      ++perShard[shardOf(i, n)];
    }
    // Balanced enough to be worth it: no shard gets under half its fair share.
    for (int k = 1; k <= n; ++k) EXPECT_GE(perShard[k], static_cast<int>(instances.size()) / n / 2) << k << "/" << n;
  }
  // Stable: the shard depends on the instance text alone (a fixed value pins the
  // hash, so a change of it, which would reshuffle every user's shards, is caught).
  EXPECT_EQ(shardOf("groupnorm 2x320x64x64 eps=1e-05 g=32 residual=0 silu=1 f32.buffer.nchw", 4),
            shardOf("groupnorm 2x320x64x64 eps=1e-05 g=32 residual=0 silu=1 f32.buffer.nchw", 4));
}

// Tunes the recording's instances owned by `shard` with the recorded times, writing
// DIR/sweeps/<key>/groupnorm[.shard-K-of-N].csv and DIR/tuned/<key>[.shard..].yaml as
// tune does.
void replayShard(const std::string& dir, const std::string& strategy, size_t budget, const Shard& shard) {
  const Family& fam = findFamily("groupnorm");
  const SweepCache rec(kRecording, familyParamNames(fam), true);
  const std::string key = "opencl-nvidia-h200-580";
  SweepCache cache(shardPath(dir + "/sweeps/" + key + "/groupnorm.csv", shard), familyParamNames(fam));
  TuningDatabase db;
  db.deviceKey = key;
  db.deviceName = rec.rows().front().device;
  db.driver = rec.rows().front().driver;
  db.sourceHashes["groupnorm"] = rec.rows().front().sourceHash;
  DeviceInfo any;
  any.type = DeviceType::Gpu;
  any.maxWorkGroupSize = SIZE_MAX;
  any.localMemBytes = UINT64_MAX;
  std::vector<std::string> instances;
  for (const auto& r : rec.rows())
    if (std::find(instances.begin(), instances.end(), r.instance) == instances.end()) instances.push_back(r.instance);
  for (const auto& text : instances) {
    if (!shard.owns(text)) continue;
    std::set<std::string> recorded;
    for (const auto& r : rec.rows())
      if (r.instance == text) recorded.insert(r.variant + " [" + r.params + "]");
    std::vector<Candidate> space;
    for (auto& c : tuningSpace(fam, any))
      if (recorded.count(c.text())) space.push_back(c);
    const Evaluator replay = replayEvaluator(rec.rows(), text, space);
    auto s = makeStrategy(strategy, space, std::min(budget, space.size()), 7);
    runSearch(space, *s, std::min(budget, space.size()), 0, [&](size_t i, bool& reused) {
      SweepRow row = replay(i, reused);
      if (!cache.find(row.key())) cache.append(row);
      return row;
    });
    const OpInstance inst = OpInstance::parse(text);
    for (const auto& r : cache.rows())
      if (r.instance == text && r.status == Status::Ok) db.record(inst, r.variant, r.params, r.medianUs, r.minUs);
  }
  db.save(shardPath(dir + "/tuned/" + key + ".yaml", shard));
}

class ShardedReplay : public ::testing::TestWithParam<std::pair<std::string, size_t>> {};

TEST_P(ShardedReplay, MergedShardsEqualOneUnshardedRun) {
  const auto [strategy, budget] = GetParam();
  sdspeed_test::TempDir one, three;
  replayShard(one.path(), strategy, budget, Shard{});
  const int n = 3;
  std::vector<std::string> dbs;
  for (int k = n; k >= 1; --k) {  // in reverse: the merge must not depend on the inputs' order
    replayShard(three.path(), strategy, budget, Shard{k, n});
    dbs.push_back(three.path() + "/tuned/opencl-nvidia-h200-580.shard-" + std::to_string(k) + "-of-3.yaml");
  }
  // Canonical forms of the unsharded files: merging one input sorts it.
  writeMergedSweeps(mergeSweeps({one.path() + "/sweeps"}), one.path() + "/canon");
  mergeDatabases({one.path() + "/tuned/opencl-nvidia-h200-580.yaml"}).save(one.path() + "/canon.yaml");
  writeMergedSweeps(mergeSweeps({three.path() + "/sweeps"}), three.path() + "/merged");
  mergeDatabases(dbs).save(three.path() + "/merged.yaml");
  const std::string sweepOne = slurp(one.path() + "/canon/opencl-nvidia-h200-580/groupnorm.csv");
  EXPECT_GT(std::count(sweepOne.begin(), sweepOne.end(), '\n'), 51) << "too few rows to mean anything";
  EXPECT_EQ(slurp(three.path() + "/merged/opencl-nvidia-h200-580/groupnorm.csv"), sweepOne);
  EXPECT_EQ(slurp(three.path() + "/merged.yaml"), slurp(one.path() + "/canon.yaml"));
  EXPECT_TRUE(compareDatabases(TuningDatabase::load(three.path() + "/merged.yaml"),
                               TuningDatabase::load(one.path() + "/tuned/opencl-nvidia-h200-580.yaml"))
                  .empty());
  // And a shard alone is not the whole: the comparison can fail.
  EXPECT_FALSE(compareDatabases(TuningDatabase::load(dbs[0]), TuningDatabase::load(one.path() + "/canon.yaml")).empty());
}

INSTANTIATE_TEST_SUITE_P(Strategies, ShardedReplay,
                         ::testing::Values(std::pair<std::string, size_t>{"exhaustive", 1000},
                                           std::pair<std::string, size_t>{"random", 3}),
                         [](const auto& info) { return info.param.first; });

const char* kDb =
    "format: 1\n"
    "device: {key: pocl-cpu-3, name: cpu, driver: %DRIVER%}\n"
    "%HASHES%"
    "entries:\n"
    "  - instance: groupnorm 1x32x8x8 eps=1e-05 g=8 residual=0 silu=0 f32.buffer.nchw\n"
    "    best: one_pass\n"
    "    variants:\n"
    "      one_pass: {params: \"%PARAMS%\", median_us: %T%, min_us: 1}\n"
    "      split: {params: \"CACHE=1,SPLIT=1,VEC=1,WG=128\", median_us: %TS%, min_us: 1}\n";

std::string writeDb(const std::string& path, const std::string& driver, const std::string& hashes,
                    const std::string& params, const std::string& t, const std::string& ts = "50") {
  std::string s = kDb;
  auto put = [&](const std::string& from, const std::string& to) { s.replace(s.find(from), from.size(), to); };
  put("%DRIVER%", driver);
  put("%HASHES%", hashes);
  put("%PARAMS%", params);
  put("%T%", t);
  put("%TS%", ts);
  writeFileAtomically(path, s);
  return path;
}

TEST(DbMerge, KeepsEveryVariantsBestAndTheBestVariant) {
  sdspeed_test::TempDir d;
  // Old files (no source_hashes) load and merge with new ones (where both hold an
  // instance, the copy of a recorded source is kept: below).
  const auto a = writeDb(d.path() + "/a.yaml", "3.1", "", "CACHE=1,VEC=1,WG=64", "20", "50");
  const auto b = writeDb(d.path() + "/b.yaml", "3.1", "source_hashes: {groupnorm: abc}\n", "CACHE=2,VEC=1,WG=64", "10", "60");
  // a carries the legacy key (pocl-cpu-3), b the current one: the same device.
  std::string bt = slurp(b);
  bt.replace(bt.find("key: pocl-cpu-3"), 15, "key: opencl-pocl-cpu-3");
  writeFileAtomically(b, bt);
  const TuningDatabase m = mergeDatabases({a, b});
  EXPECT_EQ(m.deviceKey, "opencl-pocl-cpu-3");
  ASSERT_EQ(m.entries().size(), 1u);
  EXPECT_EQ(m.entries()[0].variants.at("one_pass").params, "CACHE=2,VEC=1,WG=64");
  EXPECT_EQ(m.entries()[0].variants.at("one_pass").medianUs, 10);
  // b's copy is of a known source (abc), a's of none recorded: b's alone is kept (its
  // split at 60, not a's 50; EntriesATuneLeftBehindKeepTheirSourceHash).
  EXPECT_EQ(m.entries()[0].variants.at("split").medianUs, 60);
  EXPECT_EQ(m.entries()[0].sourceHash, "");
  EXPECT_EQ(m.entries()[0].best, "one_pass");
  EXPECT_EQ(m.sourceHashes.at("groupnorm"), "abc");
  m.save(d.path() + "/m.yaml");
  EXPECT_EQ(TuningDatabase::load(d.path() + "/m.yaml").sourceHashes.at("groupnorm"), "abc");
  // The split variant wins when it is the faster one.
  const auto c = writeDb(d.path() + "/c.yaml", "3.1", "", "CACHE=1,VEC=1,WG=64", "20", "5");
  EXPECT_EQ(mergeDatabases({a, c}).entries()[0].best, "split");
}

// A tune that rebuilds some of a family's entries against a new kernel source
// (setFamilyHash) leaves the others stamped with the source they were tuned against,
// through save and load and through a merge; entries of a file that recorded no hash are
// stamped "unrecorded". Session 41's capped conv re-tune had made 12 stale entries look
// current.
TEST(DbMerge, EntriesATuneLeftBehindKeepTheirSourceHash) {
  sdspeed_test::TempDir d;
  const OpInstance a = OpInstance::parse("groupnorm 1x32x8x8 eps=1e-05 g=8 residual=0 silu=0 f32.buffer.nchw");
  const OpInstance b = OpInstance::parse("groupnorm 1x64x8x8 eps=1e-05 g=8 residual=0 silu=0 f32.buffer.nchw");
  const OpInstance ln = OpInstance::parse("layernorm 2x320x1x64 eps=1e-05 f32.buffer.nchw");
  for (const OpInstance* i : {&a, &b, &ln}) ASSERT_NO_THROW(i->problem(findFamily(i->family))) << i->text();
  TuningDatabase db;
  db.deviceKey = "opencl-pocl-cpu-3";
  db.deviceName = "cpu";
  db.driver = "3.1";
  db.sourceHashes["groupnorm"] = "old";
  db.record(a, "one_pass", "CACHE=1,VEC=1,WG=64", 20, 10);
  db.record(b, "one_pass", "CACHE=1,VEC=1,WG=64", 30, 10);
  db.record(ln, "per_item", findFamily("layernorm").variant("per_item").defaults().text(), 5, 4);
  // Re-tune a against "new": erase, stamp the family, record (cli/tune_model.cpp's rebuildEntry).
  db.erase(a);
  db.setFamilyHash("groupnorm", "new");
  db.record(a, "one_pass", "CACHE=2,VEC=1,WG=64", 15, 10);
  auto find = [](const TuningDatabase& t, const OpInstance& i) {
    for (const auto& e : t.entries())
      if (e.instance == i) return e;
    ADD_FAILURE() << i.text();
    return TunedEntry{};
  };
  EXPECT_EQ(db.sourceHashes.at("groupnorm"), "new");
  EXPECT_EQ(db.entryHash(find(db, a)), "new");
  EXPECT_EQ(find(db, b).sourceHash, "old");
  EXPECT_EQ(db.entryHash(find(db, ln)), "");  // another family: untouched, no hash recorded
  // A second tune against "new" keeps b's stamp; tuning b then clears it.
  db.setFamilyHash("groupnorm", "new");
  EXPECT_EQ(find(db, b).sourceHash, "old");
  const std::string path = d.path() + "/db.yaml";
  db.save(path);
  EXPECT_NE(slurp(path).find("source_hash: old"), std::string::npos) << slurp(path);
  const TuningDatabase back = TuningDatabase::load(path);
  EXPECT_EQ(find(back, b).sourceHash, "old");
  EXPECT_EQ(back.entryHash(find(back, a)), "new");
  // A merge keeps a re-tuned copy alone: b current in `other` (at 40 us) and stale in the
  // file (30 us): the merged b is current with other's time, the stale 30 us dropped
  // though it is faster. Where every copy is stale, the smallest stale hash is kept.
  // Each check runs on the merge of `file` and `path` in both input orders.
  auto eitherOrder = [&](const std::string& file, const std::function<void(const TuningDatabase&)>& check) {
    for (const auto& order : {std::vector<std::string>{file, path}, std::vector<std::string>{path, file}})
      check(mergeDatabases(order));
  };
  TuningDatabase other = back;
  other.erase(b);
  other.record(b, "one_pass", "CACHE=2,VEC=1,WG=64", 40, 10);
  EXPECT_EQ(find(other, b).sourceHash, "");
  other.save(d.path() + "/other.yaml");
  eitherOrder(d.path() + "/other.yaml", [&](const TuningDatabase& m) {
    EXPECT_EQ(find(m, b).sourceHash, "");
    EXPECT_EQ(find(m, b).variants.at("one_pass").medianUs, 40);
    EXPECT_EQ(find(m, a).sourceHash, "");
  });
  // b stale in both, at "aaa" (35 us) and "old" (30 us): aaa's copy alone, in either order.
  TuningDatabase older = back;
  older.erase(b);
  older.record(b, "one_pass", "CACHE=2,VEC=1,WG=64", 35, 10);
  older.setEntryHash(b, "aaa");
  older.save(d.path() + "/older.yaml");
  eitherOrder(d.path() + "/older.yaml", [&](const TuningDatabase& m) {
    EXPECT_EQ(find(m, b).sourceHash, "aaa");
    EXPECT_EQ(find(m, b).variants.at("one_pass").medianUs, 35);
  });
  // An input that records no hash for the family: its copies count as "unrecorded".
  std::string none = slurp(path);
  none.erase(none.find("source_hashes:"), none.find('\n', none.find("source_hashes:")) + 1 - none.find("source_hashes:"));
  none.replace(none.find("    source_hash: old\n"), 21, "");
  writeFileAtomically(d.path() + "/none.yaml", none);
  const TuningDatabase mn = mergeDatabases({d.path() + "/none.yaml", d.path() + "/other.yaml"});
  EXPECT_EQ(find(mn, b).sourceHash, "");  // other's b is current
  TuningDatabase justA = back;
  justA.erase(b);
  justA.save(d.path() + "/justa.yaml");
  const TuningDatabase mu = mergeDatabases({d.path() + "/none.yaml", d.path() + "/justa.yaml"});
  EXPECT_EQ(find(mu, b).sourceHash, TuningDatabase::kUnrecordedHash);
  // A family with no recorded hash: its entries become "unrecorded" at the first tune.
  db.setFamilyHash("layernorm", "h1");
  EXPECT_EQ(find(db, ln).sourceHash, TuningDatabase::kUnrecordedHash);
  // An empty per-entry hash in a file is an error naming it.
  std::string text = slurp(path);
  text.replace(text.find("source_hash: old"), 16, "source_hash: \"\"");
  writeFileAtomically(path, text);
  const std::string e = errorMessage([&] { TuningDatabase::load(path); });
  EXPECT_NE(e.find("source_hash"), std::string::npos) << e;
}

TEST(DbMerge, RefusesAnotherDriverKeyOrKernelSourceNamingTheFile) {
  sdspeed_test::TempDir d;
  const auto a = writeDb(d.path() + "/a.yaml", "3.1", "source_hashes: {groupnorm: abc}\n", "CACHE=1,VEC=1,WG=64", "20");
  const auto drv = writeDb(d.path() + "/drv.yaml", "4.0", "", "CACHE=1,VEC=1,WG=64", "20");
  const auto hash = writeDb(d.path() + "/hash.yaml", "3.1", "source_hashes: {groupnorm: def}\n", "CACHE=1,VEC=1,WG=64", "20");
  std::string key = kDb;
  std::string keyPath = writeDb(d.path() + "/key.yaml", "3.1", "", "CACHE=1,VEC=1,WG=64", "20");
  std::string text = slurp(keyPath);
  text.replace(text.find("pocl-cpu-3"), 10, "pocl-cpu-5");
  writeFileAtomically(keyPath, text);
  std::string e = errorMessage([&] { mergeDatabases({a, drv}); });
  EXPECT_NE(e.find(drv + ": driver '4.0' differs"), std::string::npos) << e;
  e = errorMessage([&] { mergeDatabases({a, hash}); });
  EXPECT_NE(e.find(hash + ": kernel source hash of groupnorm 'def' differs from 'abc' in " + a), std::string::npos) << e;
  e = errorMessage([&] { mergeDatabases({a, keyPath}); });
  EXPECT_NE(e.find(keyPath + ": device key 'opencl-pocl-cpu-5' differs"), std::string::npos) << e;
  e = errorMessage([&] { mergeDatabases({a, d.path() + "/missing.yaml"}); });
  EXPECT_NE(e.find("missing.yaml"), std::string::npos) << e;
}

TEST(DbMerge, SweepsJoinShardFilesAndRefuseRowsOfAnotherFamily) {
  sdspeed_test::TempDir d;
  const Family& fam = findFamily("groupnorm");
  const SweepCache rec(kRecording, familyParamNames(fam), true);
  std::vector<SweepRow> first(rec.rows().begin(), rec.rows().begin() + 10),
      second(rec.rows().begin() + 5, rec.rows().begin() + 20);  // overlapping
  writeFileAtomically(d.path() + "/in/k/groupnorm.csv", SweepCache::fileText(first, familyParamNames(fam)));
  writeFileAtomically(d.path() + "/in/k/groupnorm.shard-2-of-2.csv", SweepCache::fileText(second, familyParamNames(fam)));
  const auto groups = mergeSweeps({d.path() + "/in"});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups.at("k/groupnorm").size(), 20u);
  EXPECT_TRUE(compareSweepRows(groups.at("k/groupnorm"), std::vector<SweepRow>(rec.rows().begin(), rec.rows().begin() + 20)).empty());
  EXPECT_EQ(compareSweepRows(first, second).size(), 15u);  // 5 only in the first, 10 in the second
  writeFileAtomically(d.path() + "/bad/k/gemm.csv", SweepCache::fileText(first, familyParamNames(findFamily("gemm"))));
  const std::string e = errorMessage([&] { mergeSweeps({d.path() + "/bad"}); });
  EXPECT_NE(e.find("gemm.csv: row of 'groupnorm"), std::string::npos) << e;
}

TEST(ModelBudget, PointsFollowTheWeightsWithinEachSpace) {
  // Every item gets a point first, then D'Hondt: 3:1 weights split 3:1.
  auto p = allocatePoints({{3, 100}, {1, 100}}, 40);
  EXPECT_EQ(p[0] + p[1], 40u);
  EXPECT_EQ(p[0], 30u);
  // A space caps its item; the rest goes to the others.
  p = allocatePoints({{100, 5}, {1, 100}, {1, 100}}, 45);
  EXPECT_EQ(p[0], 5u);
  EXPECT_EQ(p[1], 20u);
  EXPECT_EQ(p[2], 20u);
  // Fewer points than items: the heaviest get one each (ties: the earlier).
  p = allocatePoints({{1, 9}, {5, 9}, {5, 9}, {2, 9}}, 2);
  EXPECT_EQ(p, (std::vector<size_t>{0, 1, 1, 0}));
  // More points than the spaces hold: every point of every space.
  p = allocatePoints({{1, 3}, {2, 4}}, 100);
  EXPECT_EQ(p, (std::vector<size_t>{3, 4}));
  EXPECT_DOUBLE_EQ(timeSlice(100, 1, 4), 25);
  EXPECT_DOUBLE_EQ(timeSlice(-1, 1, 4), 0);
}

}  // namespace
}  // namespace sdspeed
