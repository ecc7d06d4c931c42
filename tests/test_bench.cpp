// sdspeed-bench end to end on the default device (PoCL in CI): a tiny shape set with
// every family, Google Benchmark's JSON output parsed and checked (names, labels,
// counters, context), a broken kernel skipped with its status, unsupported formats
// skipped as such, and the instance listing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "test_support.h"
#include "tuning/database.h"

using sdspeed_test::TempDir;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kSource = SDSPEED_SOURCE_DIR;
const std::string kShapes = std::string(SDSPEED_TEST_DATA) + "/bench-shapes.yaml";
// Instances of kShapes (the groupnorm one appears twice there and once here).
const std::string kGroupNorm = "2x32x8x8 eps=1e-05 g=32 residual=0 silu=1 f32.buffer.nchw";
const std::string kLayerNorm = "2x64x1x16 eps=1e-05 f32.buffer.nchw";
const std::string kSoftmax = "2x77x1x16 scale=0.125 f32.buffer.nchw";
const std::string kGeglu = "2x64x1x16 fn=geglu f32.buffer.nchw";

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct BenchRun {
  int exitCode = -1;
  std::string out, err;
  json report;  // --benchmark_out, when written
  std::string describe() const { return "exit " + std::to_string(exitCode) + "\n--- stderr:\n" + err; }
};

class Bench : public ::testing::Test {
 protected:
  // Runs sdspeed-bench with a fresh program cache; with json, also writes and parses
  // --benchmark_out (json format) with a short --benchmark_min_time.
  BenchRun run(std::vector<std::string> args, bool withJson = true) {
    const std::string outJson = io_.path() + "/out.json";
    if (withJson) {
      args.push_back("--benchmark_min_time=0.002");
      args.push_back("--benchmark_out=" + outJson);
      args.push_back("--benchmark_out_format=json");
    }
    std::string cmd = "SDSPEED_CACHE_DIR=" + quote(cache_.path()) + " " + quote(SDSPEED_BENCH_BIN);
    for (const auto& a : args) {
      cmd += ' ';
      cmd += quote(a);
    }
    cmd += " </dev/null >";
    cmd += quote(io_.path() + "/stdout");
    cmd += " 2>";
    cmd += quote(io_.path() + "/stderr");
    const int status = std::system(cmd.c_str());
    BenchRun r;
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(io_.path() + "/stdout");
    r.err = slurp(io_.path() + "/stderr");
    if (withJson && fs::exists(outJson)) r.report = json::parse(slurp(outJson));
    return r;
  }

  // The benchmarks of a report by name without Google Benchmark's "/manual_time".
  static std::map<std::string, json> byName(const json& report) {
    std::map<std::string, json> out;
    for (const auto& b : report.at("benchmarks")) {
      std::string name = b.at("name").get<std::string>();
      const std::string suffix = "/manual_time";
      EXPECT_TRUE(name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
          << name;
      name = name.substr(0, name.size() - suffix.size());
      EXPECT_EQ(out.count(name), 0u) << "benchmarked twice: " << name;
      out[name] = b;
    }
    return out;
  }

  TempDir cache_, io_;
};

TEST_F(Bench, EveryInstanceAndVariantWithCountersAndContext) {
  const BenchRun r = run({"--shapes", kShapes, "--tuned-dir", kSource + "/configs/tuned", "--devices-dir",
                     kSource + "/configs/devices", "--batch-ms", "1", "--warmup", "1"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  ASSERT_TRUE(r.report.is_object()) << r.describe();

  const json& ctx = r.report.at("context");
  for (const char* key : {"device_name", "device_key", "driver", "opencl_version", "sdspeed_commit"})
    EXPECT_FALSE(ctx.value(key, "").empty()) << key;
  const std::string key = ctx.value("device_key", "");
  EXPECT_TRUE(std::regex_match(key, std::regex("[a-z0-9-]+"))) << key;
  EXPECT_EQ(ctx.value("opencl_version", "").rfind("OpenCL ", 0), 0u) << ctx.value("opencl_version", "");
  for (const char* fam : {"groupnorm", "layernorm", "softmax", "activation"})
    EXPECT_TRUE(std::regex_match(ctx.value(std::string("source_hash_") + fam, ""), std::regex("[0-9a-f]{12}"))) << fam;
  EXPECT_EQ(ctx.value("shapes", ""), kShapes);
  const bool haveCeil = fs::exists(kSource + "/configs/devices/" + key + ".yaml");
  const std::string dbPath = kSource + "/configs/tuned/" + key + ".yaml";
  const bool haveDb = fs::exists(dbPath);
  // The families this device's checked-in database has entries for: their variants run
  // tuned parameters (exact or a fallback), the others their declared defaults.
  // "family/variant" of every variant the database records (a variant added since the
  // device was tuned runs its declared defaults).
  std::set<std::string> tunedVariants;
  if (haveDb) {
    const sdspeed::TuningDatabase db = sdspeed::TuningDatabase::load(dbPath);
    for (const auto& e : db.entries())
      for (const auto& [variant, tv] : e.variants) tunedVariants.insert(e.instance.family + "/" + variant);
  }
  EXPECT_EQ(ctx.contains("copy_gb_per_s"), haveCeil);

  const auto benches = byName(r.report);
  std::set<std::string> names;
  for (const auto& [n, b] : benches) names.insert(n);
  const std::set<std::string> want = {
      "groupnorm/two_pass/" + kGroupNorm, "groupnorm/one_pass/" + kGroupNorm, "groupnorm/split/" + kGroupNorm,
      "layernorm/per_item/" + kLayerNorm, "layernorm/cooperative/" + kLayerNorm, "layernorm/split/" + kLayerNorm,
      "softmax/per_item/" + kSoftmax,     "softmax/cooperative/" + kSoftmax,     "softmax/split/" + kSoftmax,
      "activation/slices/" + kGeglu};
  EXPECT_EQ(names, want);

  for (const auto& [name, b] : benches) {
    SCOPED_TRACE(name);
    ASSERT_FALSE(b.value("error_occurred", false)) << b.value("error_message", "");
    EXPECT_EQ(b.value("time_unit", ""), "us");
    const double us = b.at("real_time").get<double>();
    EXPECT_GT(us, 0);
    EXPECT_GT(b.at("iterations").get<double>(), 0);
    // Label: params=tuned|default and the point.
    const std::string label = b.value("label", "");
    const bool tuned = tunedVariants.count(name.substr(0, name.find('/', name.find('/') + 1))) > 0;
    EXPECT_EQ(label.rfind(tuned ? "params=tuned " : "params=default ", 0), 0u) << label;
    EXPECT_TRUE(label.find("WG=") != std::string::npos || label.find("TX=") != std::string::npos) << label;
    // Rates over the iteration (manual) time, from the op's bytes and FLOPs.
    const double bytes = b.at("bytes").get<double>(), flops = b.at("flops").get<double>();
    EXPECT_GT(bytes, 0);
    EXPECT_GT(flops, 0);
    EXPECT_NEAR(b.at("bytes_per_second").get<double>(), bytes / (us * 1e-6), 1e-3 * bytes / (us * 1e-6));
    EXPECT_NEAR(b.at("flop_per_second").get<double>(), flops / (us * 1e-6), 1e-3 * flops / (us * 1e-6));
    const double median = b.at("median_us").get<double>(), mn = b.at("min_us").get<double>();
    EXPECT_GT(mn, 0);
    EXPECT_LE(mn, median);
    EXPECT_LE(mn, us * 1.0001);  // the mean of the samples is at least their minimum
    EXPECT_GE(b.at("rotations").get<double>(), 1);
    if (haveCeil) {
      const double copy = std::stod(ctx.value("copy_gb_per_s", "0")) * 1e9;
      const double fma = std::stod(ctx.value("fma_gflop_per_s", "0")) * 1e9;
      EXPECT_NEAR(b.at("copy_fraction").get<double>(), b.at("bytes_per_second").get<double>() / copy,
                  1e-3 * b.at("bytes_per_second").get<double>() / copy);
      EXPECT_NEAR(b.at("fma_fraction").get<double>(), b.at("flop_per_second").get<double>() / fma,
                  1e-3 * b.at("flop_per_second").get<double>() / fma);
    }
  }
  // FLOPs from the op definitions (kernels/family.h): groupnorm+SiLU 12 per element +
  // 4 per group; geglu 6 per output element.
  EXPECT_DOUBLE_EQ(benches.at("groupnorm/two_pass/" + kGroupNorm).at("flops").get<double>(), 12.0 * 4096 + 4.0 * 64);
  EXPECT_DOUBLE_EQ(benches.at("activation/slices/" + kGeglu).at("flops").get<double>(), 6.0 * 2 * 32 * 16);
  // minBytes of groupnorm: x and y in f32 plus gamma and beta.
  EXPECT_DOUBLE_EQ(benches.at("groupnorm/two_pass/" + kGroupNorm).at("bytes").get<double>(), 2.0 * 4096 * 4 + 2 * 32 * 4);
}

// A kernel that computes the wrong answer is skipped with its status and message
// (and the run exits 1); the variant that is right still runs.
TEST_F(Bench, FailingCheckIsSkippedWithStatus) {
  TempDir kernels;
  fs::copy(kSource + "/kernels", kernels.path(), fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  const std::string cl = kernels.path() + "/softmax/softmax.cl";
  std::string text = slurp(cl);
  const std::string line = "const float inv = 1.0f / sum;";
  ASSERT_NE(text.find(line), std::string::npos);
  text.replace(text.find(line), line.size(), "const float inv = 0.5f / sum;");  // per_item only
  std::ofstream(cl) << text;
  const BenchRun r = run({"--shapes", kShapes, "--op", "softmax", "--kernel-dir", kernels.path(), "--batch-ms", "1"});
  EXPECT_EQ(r.exitCode, 1) << r.describe();
  const auto benches = byName(r.report);
  ASSERT_EQ(benches.size(), 3u);
  const json& bad = benches.at("softmax/per_item/" + kSoftmax);
  EXPECT_TRUE(bad.value("error_occurred", false));
  EXPECT_EQ(bad.value("error_message", "").rfind("inaccurate: ", 0), 0u) << bad.value("error_message", "");
  EXPECT_NE(r.err.find("softmax/per_item"), std::string::npos) << r.err;
  for (const char* v : {"cooperative", "split"}) {
    const json& good = benches.at(std::string("softmax/") + v + "/" + kSoftmax);
    EXPECT_FALSE(good.value("error_occurred", false)) << good.value("error_message", "");
    EXPECT_GT(good.value("median_us", 0.0), 0);
  }
}

// Variants that cannot store a format are skipped as unsupported, not failures.
TEST_F(Bench, UnsupportedIsSkippedNotFailed) {
  const BenchRun r = run({"--shapes", kShapes, "--op", "groupnorm", "--variant", "one_pass", "--storage",
                     "f32.image2d.nc4hw4", "--batch-ms", "1"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  const auto benches = byName(r.report);
  ASSERT_EQ(benches.size(), 1u);
  const json& b = benches.begin()->second;
  EXPECT_EQ(benches.begin()->first, "groupnorm/one_pass/2x32x8x8 eps=1e-05 g=32 residual=0 silu=1 f32.image2d.nc4hw4");
  EXPECT_TRUE(b.value("error_occurred", false));
  EXPECT_EQ(b.value("error_message", "").rfind("unsupported: ", 0), 0u) << b.value("error_message", "");
}

TEST_F(Bench, ListsInstancesAndRejectsBadOptions) {
  BenchRun r = run({"--shapes", kShapes, "--list-instances"}, false);
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(r.out, "groupnorm " + kGroupNorm + "\nlayernorm " + kLayerNorm + "\nsoftmax " + kSoftmax +
                       "\nactivation " + kGeglu + "\n");
  r = run({"--shapes", kShapes, "--op", "nosuchop"}, false);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("unknown op 'nosuchop'"), std::string::npos) << r.err;
  r = run({"--shapes", kShapes, "--frobnicate", "1"}, false);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("unknown option --frobnicate"), std::string::npos) << r.err;
  r = run({"--help"}, false);
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.out.find("--tuned-dir"), std::string::npos);
  EXPECT_NE(r.out.find("benchmark_out"), std::string::npos);
}

}  // namespace
