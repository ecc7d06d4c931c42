// tune --shard, db merge / compare and tune --model under one budget through the
// sdspeed binary on the device (PoCL in CI), with tiny shapes: N shards merged measured
// the same points as one unsharded run (random search under a point budget, fixed
// seed), and bad input is one error line.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>

#include "cli_support.h"

namespace sdspeed_test {
namespace {

const std::vector<std::string> kTune = {"tune", "--op", "groupnorm", "--shape", "1x16x4x4,1x32x4x4,2x16x8x8,1x48x4x4",
                                        "--attrs", "g=4", "--strategy", "random", "--budget", "3", "--seed", "5",
                                        "--min-ms", "1", "--threads", "1"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::string only(const std::string& dir, const std::string& tail) {
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir))
    if (f.path().string().size() >= tail.size() &&
        f.path().string().compare(f.path().string().size() - tail.size(), tail.size(), tail) == 0)
      return f.path().string();
  ADD_FAILURE() << "no *" << tail << " under " << dir;
  return "";
}

TEST_F(Cli, ShardsMergedMeasureWhatOneRunMeasures) {
  TempDir one, shards;
  Result r = run(with(kTune, {"--sweep-dir", one.path() + "/sweeps", "--db-dir", one.path() + "/tuned"}));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  int owned = 0;
  for (const char* k : {"1/3", "2/3", "3/3"}) {
    r = run(with(kTune, {"--shard", k, "--sweep-dir", shards.path() + "/sweeps", "--db-dir", shards.path() + "/tuned"}));
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    const size_t at = r.out.find("shard " + std::string(k) + ": ");
    ASSERT_NE(at, std::string::npos) << r.out;
    owned += std::stoi(r.out.substr(at + 10));
  }
  EXPECT_EQ(owned, 4) << "every instance in exactly one shard";
  const std::string oneDb = only(one.path() + "/tuned", ".yaml");
  std::vector<std::string> merge = {"db", "merge"};
  for (int k = 1; k <= 3; ++k) merge.push_back(only(shards.path() + "/tuned", ".shard-" + std::to_string(k) + "-of-3.yaml"));
  r = run(with(merge, {"-o", shards.path() + "/merged.yaml"}));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  r = run({"db", "merge", "--sweeps", shards.path() + "/sweeps", "-o", shards.path() + "/merged"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  r = run({"db", "compare", oneDb, shards.path() + "/merged.yaml"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  r = run({"db", "compare", "--sweeps", one.path() + "/sweeps", shards.path() + "/merged"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("same points"), std::string::npos) << r.out;
  // The merged database records the kernel source hash tune wrote.
  EXPECT_NE(slurp(shards.path() + "/merged.yaml").find("source_hashes: {groupnorm: "), std::string::npos);
  // A single shard is not the whole: compare says so, exit 1.
  r = run({"db", "compare", oneDb, merge[2]});
  EXPECT_EQ(r.exitCode, 1) << r.describe();
  EXPECT_NE(r.out.find("only in the first: groupnorm"), std::string::npos) << r.out;
}

// A re-tune times the database's recorded points before its budget: another seed's
// one random point over the same database, into a fresh sweep folder, also times the
// point the first run recorded, so the rebuilt entry holds it re-timed (a re-tune that
// missed the old winner replaced it with whatever it tried: session 42's VAE attention).
TEST_F(Cli, ReTuneTimesTheRecordedPointsFirst) {
  TempDir dir;
  const std::vector<std::string> tune = {"tune", "--op", "groupnorm", "--shape", "1x16x4x4", "--attrs", "g=4",
                                         "--strategy", "random", "--budget", "1", "--min-ms", "1", "--threads", "1",
                                         "--db-dir", dir.path() + "/tuned"};
  Result r = run(with(tune, {"--seed", "5", "--sweep-dir", dir.path() + "/s1"}));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(best two_pass \[([^\]]+)\])"))) << r.out;
  const std::string first = m[1];
  r = run(with(tune, {"--seed", "6", "--sweep-dir", dir.path() + "/s2"}));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("1 measured, 0 reused"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 recorded point timed first: 1 measured, 0 reused, 0 failed"), std::string::npos) << r.out;
  const std::string sweep = slurp(only(dir.path() + "/s2", "groupnorm.csv"));
  EXPECT_NE(sweep.find("\"" + first + "\""), std::string::npos) << "the recorded point was not timed:\n" << sweep;
  // A shard (tune --device gpus runs them) reads the recorded points from the database the
  // shards are merged into, not from its own, still empty, file.
  std::string shards;
  for (const char* k : {"1/2", "2/2"}) {
    r = run(with(tune, {"--seed", "6", "--sweep-dir", dir.path() + "/s3", "--shard", k}));
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    shards += r.out;
  }
  EXPECT_NE(shards.find("1 recorded point timed first"), std::string::npos) << shards;
}

// anneal and model start from the recorded points: proposed again they are cache hits
// beside the budget, so a budget of 1 still measures one new point.
TEST_F(Cli, ReTuneWalksFromTheRecordedPoints) {
  TempDir dir;
  const std::vector<std::string> tune = {"tune", "--op", "groupnorm", "--shape", "1x16x4x4", "--attrs", "g=4",
                                         "--budget", "1", "--min-ms", "1", "--threads", "1",
                                         "--db-dir", dir.path() + "/tuned", "--sweep-dir", dir.path() + "/s"};
  Result r = run(with(tune, {"--strategy", "random", "--seed", "5"}));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  r = run(with(tune, {"--strategy", "anneal", "--seed", "6"}));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("1 measured, 1 reused"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 recorded point timed first: 0 measured, 1 reused, 0 failed"), std::string::npos) << r.out;
}

// --device gpus on a host without GPUs, through its test hook: two "GPUs" (PoCL's CPU
// device twice) run one shard each in parallel child processes, then the merge leaves
// the unsharded files, with the points of one unsharded run and no shard file.
TEST_F(Cli, DeviceGpusRunsAShardPerGpuAndMerges) {
  TempDir one, gpus;
  Result r = run(with(kTune, {"--sweep-dir", one.path() + "/sweeps", "--db-dir", one.path() + "/tuned"}));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  ::setenv("SDSPEED_TEST_GPUS", "0:0,0:0", 1);
  r = run(with(kTune, {"--device", "gpus", "--sweep-dir", gpus.path() + "/sweeps", "--db-dir", gpus.path() + "/tuned"}));
  ::unsetenv("SDSPEED_TEST_GPUS");
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("[gpu 0:0 shard 1/2] "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[gpu 0:0 shard 2/2] "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("merged database: "), std::string::npos) << r.out;
  const std::string db = only(gpus.path() + "/tuned", ".yaml");
  EXPECT_EQ(db.find(".shard-"), std::string::npos) << db;
  r = run({"db", "compare", only(one.path() + "/tuned", ".yaml"), db});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  r = run({"db", "compare", "--sweeps", one.path() + "/sweeps", gpus.path() + "/sweeps"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  for (const auto& f : std::filesystem::recursive_directory_iterator(gpus.path()))
    EXPECT_EQ(f.path().string().find(".shard-"), std::string::npos) << f.path();
  // A kernel changed since that tune (the file's groupnorm hash made all zeros): the next
  // --device gpus tune merges its shards' current copies over the file's instead of
  // refusing two hashes, and leaves no entry stamped (every one was re-tuned).
  std::string text = slurp(db);
  const size_t at = text.find("source_hashes: {groupnorm: ");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string current = text.substr(at + 27, 12);
  text.replace(at + 27, 12, "000000000000");
  std::ofstream(db) << text;
  ::setenv("SDSPEED_TEST_GPUS", "0:0,0:0", 1);
  r = run(with(kTune, {"--device", "gpus", "--sweep-dir", gpus.path() + "/sweeps", "--db-dir", gpus.path() + "/tuned"}));
  ::unsetenv("SDSPEED_TEST_GPUS");
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  text = slurp(db);
  EXPECT_NE(text.find("source_hashes: {groupnorm: " + current + "}"), std::string::npos) << text;
  EXPECT_EQ(text.find("source_hash: "), std::string::npos) << text;
  r = run({"db", "compare", only(one.path() + "/tuned", ".yaml"), db});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  for (const auto& f : std::filesystem::recursive_directory_iterator(gpus.path()))
    EXPECT_EQ(f.path().string().find(".restamped"), std::string::npos) << f.path();
}

TEST_F(Cli, ShardAndMergeBadInputIsOneLine) {
  expectOneLineError(with(kTune, {"--shard", "4/3"}), {"--shard wants K/N", "'4/3'"});
  expectOneLineError({"db", "merge", "-o", io_.path() + "/x.yaml"}, {"db merge needs input files"});
  expectOneLineError({"db", "merge", io_.path() + "/none.yaml", "-o", io_.path() + "/x.yaml"}, {"none.yaml"});
  expectOneLineError({"db", "frob"}, {"unknown db command 'frob'"});
  expectOneLineError({"db", "merge", "--bogus"}, {"unknown option --bogus"});
  // No GPU on the CI machine: --device gpus says so in one line.
  expectOneLineError({"tune", "--op", "groupnorm", "--shape", "1x16x4x4", "--attrs", "g=4", "--device", "gpus"},
                     {"--device gpus: no GPU among this host's OpenCL devices"});
  expectOneLineError({"tune", "--model", std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a"},
                     {"needs one of --total-seconds T or --total-points N"});
  expectOneLineError({"tune", "--model", std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a", "--total-points", "5",
                      "--budget", "3"},
                     {"--budget needs --op"});
  expectOneLineError({"tune", "--model", std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a", "--total-points", "x"},
                     {"--total-points wants a positive number"});
  expectOneLineError({"tune", "--model", std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a", "--total-points", "5",
                      "--component", "unett"},
                     {"unknown component 'unett'"});
  expectOneLineError({"tune", "--model", std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a", "--total-points", "5",
                      "--context-ops", "twice"},
                     {"--context-ops wants once or every-step", "'twice'"});
  expectOneLineError({"tune", "--op", "groupnorm", "--shape", "1x16x4x4", "--attrs", "g=4", "--context-ops", "once"},
                     {"--context-ops is for tune --model without --op"});
}

// The whole text encoder of the tiny fixture under one point budget, sharded in two and
// unsharded: the same points, a summary per component, and a resumed run reuses all.
TEST_F(Cli, WholeModelUnderOnePointBudget) {
  TempDir one, two;
  const std::vector<std::string> tune = {"tune", "--model", std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a",
                                         "--component", "text_encoder", "--total-points", "8", "--seed", "3",
                                         "--min-ms", "1", "--threads", "1"};
  Result r = run(with(tune, {"--sweep-dir", one.path() + "/sweeps", "--db-dir", one.path() + "/tuned"}));
  ASSERT_LE(r.exitCode, 3) << r.describe();
  EXPECT_NE(r.out.find("expected run-time gain per component call"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("text_encoder"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("budget 8 of 8 points"), std::string::npos) << r.out;
  for (const char* k : {"1/2", "2/2"}) {
    Result s = run(with(tune, {"--shard", k, "--sweep-dir", two.path() + "/sweeps", "--db-dir", two.path() + "/tuned"}));
    ASSERT_LE(s.exitCode, 3) << s.describe();
  }
  r = run({"db", "merge", "--sweeps", two.path() + "/sweeps", "-o", two.path() + "/merged"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  r = run({"db", "compare", "--sweeps", one.path() + "/sweeps", two.path() + "/merged"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  // Resumed: every point is in the sweep caches already.
  r = run(with(tune, {"--sweep-dir", two.path() + "/merged", "--db-dir", two.path() + "/tuned"}));
  ASSERT_LE(r.exitCode, 3) << r.describe();
  EXPECT_NE(r.out.find(" 0 measured"), std::string::npos) << r.out;
}

// A time budget: spent heaviest first, then it stops (a point under way finishes), says
// how many instances it did not reach, and still writes the database and the summary.
TEST_F(Cli, WholeModelUnderATimeBudget) {
  TempDir d;
  const auto start = std::chrono::steady_clock::now();
  Result r = run({"tune", "--model", std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a", "--total-seconds", "3",
                  "--min-ms", "1", "--threads", "1", "--sweep-dir", d.path() + "/sweeps", "--db-dir", d.path() + "/tuned"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_LE(r.exitCode, 3) << r.describe();
  EXPECT_NE(r.out.find("budget 3s of 3s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("instances not reached: the time ran out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected run-time gain per component call"), std::string::npos) << r.out;
  EXPECT_LT(took, 60) << "a 3 s budget ran " << took << " s";
  EXPECT_FALSE(only(d.path() + "/tuned", ".yaml").empty());
}

// Under --arithmetic f16 (Vulkan: lavapipe has shaderFloat16) the budget goes to the half
// variants only, and each instance's current choice is the one `run` would take (a half
// variant by the default order), measured first: before this, the space held every f32
// variant too and the current choice was the f32 database's, so points went to rows that
// could only say "computes in f32 only" and no instance had a baseline.
TEST_F(Cli, WholeModelUnderF16ArithmeticTunesHalfVariants) {
  const Result devices = run({"devices", "--device", "vulkan:0"});
  if (devices.exitCode != 0) GTEST_SKIP() << "no Vulkan device: " << devices.describe();
  TempDir d;
  const Result r = run({"tune", "--model", std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a", "--component", "text_encoder",
                        "--backend", "vulkan", "--arithmetic", "f16", "--storage", "f16.buffer.nchw", "--weights", "f16",
                        "--total-points", "6", "--seed", "2", "--min-ms", "1", "--threads", "1", "--sweep-dir",
                        d.path() + "/sweeps", "--db-dir", d.path() + "/tuned"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  size_t rows = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(d.path() + "/sweeps")) {
    if (f.path().extension() != ".csv") continue;
    const std::string csv = f.path().string();
    std::istringstream in(slurp(csv));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      ++rows;
      EXPECT_EQ(line.find("computes in f32 only"), std::string::npos) << csv << ": " << line;
      EXPECT_NE(line.find(",ok,"), std::string::npos) << csv << ": " << line;
    }
  }
  EXPECT_GT(rows, 0u) << r.out;
  // The instances with a half variant (6 of 7: the token embedding has none) got their
  // baseline: the current choice ran.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("text_encoder +7 +6 "))) << r.out;
}

// The same for one op's instances (`tune --op`): under --arithmetic f16 the points go to the
// half variants only. Before, the f32 variants stayed in the space, and a small budget went
// to rows that could only say "computes in f32 only" (groupnorm's two_pass_f16 never ran
// in 3 points a GroupNorm of the tiny model).
TEST_F(Cli, OneOpUnderF16ArithmeticTunesHalfVariants) {
  const Result devices = run({"devices", "--device", "vulkan:0"});
  if (devices.exitCode != 0) GTEST_SKIP() << "no Vulkan device: " << devices.describe();
  TempDir d;
  const Result r = run({"tune", "--op", "groupnorm", "--shape", "1x16x4x4", "--attrs", "g=4", "--backend", "vulkan",
                        "--arithmetic", "f16", "--storage", "f16.buffer.nc4hw4", "--strategy", "random", "--budget",
                        "4", "--seed", "5", "--min-ms", "1", "--threads", "1", "--sweep-dir", d.path() + "/sweeps",
                        "--db-dir", d.path() + "/tuned"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  std::istringstream in(slurp(only(d.path() + "/sweeps", "groupnorm.csv")));
  std::string line;
  std::getline(in, line);  // header
  size_t rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    EXPECT_EQ(line.find("computes in f32 only"), std::string::npos) << line;
    EXPECT_NE(line.find("_f16,"), std::string::npos) << line;
  }
  EXPECT_EQ(rows, 4u) << r.out;
}

}  // namespace
}  // namespace sdspeed_test
