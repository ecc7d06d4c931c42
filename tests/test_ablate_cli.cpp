// `sdspeed ablate` on the tiny fixture model: the table's structure, that each row ran
// what it allows (read from the report, not from the config), that each row's output
// stays within its tolerance of the baseline, and --merge.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include <nlohmann/json.hpp>
#include <regex>

#include "cli_support.h"
#include "pipeline/run/ablation.h"
#include "test_support.h"

using sdspeed_test::Cli;
using sdspeed_test::Result;
using sdspeed_test::slurp;
using sdspeed_test::TempDir;

namespace {

const std::string kA = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
const std::string kRef = kA + "/reference.safetensors";
const std::string kPlan = std::string(SDSPEED_SOURCE_DIR) + "/configs/ablation/paper.yaml";

// `sdspeed ablate` of `plan` on the tiny model (1 DDIM step, the fixture's inputs) into `out`.
std::vector<std::string> ablateArgs(const std::string& plan, const std::string& out) {
  return {"ablate", "--model", kA, "--steps", "1", "--scheduler", "ddim", "--input-ids",
          kRef + ":input_ids_cond", "--uncond-input-ids", kRef + ":input_ids_uncond", "--init-latents",
          kRef + ":init_latents", "--ablation", plan, "--out", out, "--db-dir",
          std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned"};
}

TEST_F(Cli, AblatePaperRowsOnTheTinyModel) {
  TempDir out;
  const Result r = run(ablateArgs(kPlan, out.path()));
  ASSERT_EQ(r.exitCode, 0) << r.describe();  // non-zero when a row leaves its tolerance
  const auto plan = sdspeed::loadAblationPlan(kPlan);
  const auto j = nlohmann::json::parse(slurp(out.path() + "/ablation.json"));
  ASSERT_EQ(j.at("rows").size(), plan.rows.size());

  // The table: a header, a rule and one line per row, in the config's order.
  const std::string md = slurp(out.path() + "/ablation.md");
  for (const auto& row : plan.rows) EXPECT_NE(md.find("| " + row.name + " |"), std::string::npos) << row.name;
  EXPECT_NE(md.find("| row | UNet ms/iter |"), std::string::npos);
  EXPECT_EQ(slurp(out.path() + "/ablation.csv").find("row,unet_ms_median"), 0u);

  std::string previous;
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    const auto& row = plan.rows[i];
    const auto& got = j.at("rows")[i];
    SCOPED_TRACE(row.name);
    EXPECT_TRUE(got.at("within_tolerance").get<bool>());
    EXPECT_EQ(got.at("fallbacks").get<int>(), 0);  // every op ran one of the row's own variants
    EXPECT_LE(got.at("max_abs_vs_baseline").get<double>(), row.maxAbs);
    // Every op of a restricted family ran one of the row's allowed variants.
    for (const auto& [key, n] : got.at("variants_run").items()) {
      const std::string fam = key.substr(0, key.find('/')), variant = key.substr(key.find('/') + 1);
      auto allowed = row.variants.find(fam);
      if (allowed == row.variants.end()) continue;
      EXPECT_NE(std::find(allowed->second.begin(), allowed->second.end(), variant), allowed->second.end())
          << key << " is not allowed in this row";
    }
    // Unfused rows run SiLU/GELU as separate activation kernels: more of them.
    const int activations = got.at("variants_run").value("activation/slices", 0);
    if (!row.fused) EXPECT_GT(activations, 10);
    else EXPECT_LE(activations, 1);  // the time embedding's SiLU only
    // No row silently repeats the previous one: the variants run or a setting differ.
    const std::string now = got.at("variants_run").dump() + got.at("planner").get<std::string>() +
                            got.at("precision").get<std::string>() + (got.at("fused").get<bool>() ? "f" : "u");
    EXPECT_NE(now, previous);
    previous = now;
  }
  // The planner rows plan less memory than one buffer per tensor.
  EXPECT_LT(j.at("rows")[5].at("activation_bytes").get<uint64_t>(), j.at("rows")[4].at("activation_bytes").get<uint64_t>());

  // --merge: one column per result folder.
  const Result m = run({"ablate", "--merge", out.path(), out.path()});
  ASSERT_EQ(m.exitCode, 0) << m.describe();
  EXPECT_NE(m.out.find("| baseline |"), std::string::npos) << m.out;
}

// A memory row: "+ components released" changes the peak, not one pixel (max_abs 0).
TEST_F(Cli, AblateReleaseRowLowersThePeakOnly) {
  TempDir d;
  const std::string plan = d.path() + "/release.yaml";
  std::ofstream(plan) << "format: 1\nname: release\nrows:\n  - name: resident\n    release: false\n    max_abs: 0\n"
                         "  - name: + components released\n    release: true\n";
  const Result r = run(ablateArgs(plan, d.path() + "/out"));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  const auto rows = nlohmann::json::parse(slurp(d.path() + "/out/ablation.json")).at("rows");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].at("components_released").get<bool>());
  EXPECT_TRUE(rows[1].at("components_released").get<bool>());
  EXPECT_EQ(rows[1].at("max_abs_vs_baseline").get<double>(), 0.0);
  EXPECT_LT(rows[1].at("peak_bytes").get<uint64_t>(), rows[0].at("peak_bytes").get<uint64_t>());
  EXPECT_EQ(rows[1].at("activation_bytes"), rows[0].at("activation_bytes"));
  // paper.yaml's rows stay resident (its baseline says release: false).
  for (const auto& row : sdspeed::loadAblationPlan(kPlan).rows) EXPECT_FALSE(row.release.value_or(true)) << row.name;
}

// The ablation format's `backend` key (issue #21): one table whose rows run through
// OpenCL, then Vulkan at f32, then Vulkan at f16 arithmetic and storage, each checked
// against the OpenCL baseline (f32 on either API: summation orders only; f16: the f16
// storage row's bound of paper.yaml).
TEST_F(Cli, AblateRowsAcrossBackends) {
  const Result devices = run({"devices", "--device", "vulkan:0"});
  if (devices.exitCode != 0) GTEST_SKIP() << "no Vulkan device: " << devices.describe();
  TempDir d;
  const std::string plan = d.path() + "/backends.yaml";
  std::ofstream(plan) << "format: 1\nname: backends\nrows:\n  - name: opencl\n    max_abs: 0\n"
                         "  - name: + vulkan\n    backend: vulkan\n    max_abs: 1.0e-3\n"
                         "  - name: + f16 arithmetic\n    precision: f16\n    arithmetic: f16\n    max_abs: 5.0e-2\n";
  const Result r = run(ablateArgs(plan, d.path() + "/out"));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  const auto rows = nlohmann::json::parse(slurp(d.path() + "/out/ablation.json")).at("rows");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].at("backend"), "opencl");
  EXPECT_EQ(rows[1].at("backend"), "vulkan");
  EXPECT_EQ(rows[2].at("backend"), "vulkan");  // inherited
  EXPECT_EQ(rows[2].at("arithmetic"), "f16");
  for (const auto& row : rows) EXPECT_TRUE(row.at("within_tolerance").get<bool>()) << row.dump();
  EXPECT_GT(rows[1].at("max_abs_vs_baseline").get<double>(), 0.0);  // really another implementation
}

// configs/ablation/vulkan.yaml: the paper's rows on Vulkan, then f16 arithmetic, then the
// tensor cores (running the whole file on lavapipe would take minutes: its parse and shape
// here, the skip below on a two-row file).
TEST(AblationPlan, VulkanFileEndsWithF16ArithmeticTensorCoresContextOpsThenGemv) {
  const auto plan = sdspeed::loadAblationPlan(std::string(SDSPEED_SOURCE_DIR) + "/configs/ablation/vulkan.yaml");
  ASSERT_GE(plan.rows.size(), 5u);
  for (const auto& row : plan.rows) EXPECT_EQ(row.backend, "vulkan") << row.name;
  const auto& f16 = plan.rows[plan.rows.size() - 4];
  const auto& tc = plan.rows[plan.rows.size() - 3];
  // The row before last turns on the context ops' reuse, every row before it runs them
  // every step, and it changes nothing else.
  const auto& ctx = plan.rows[plan.rows.size() - 2];
  EXPECT_EQ(ctx.name, "+ context ops once");
  EXPECT_EQ(ctx.reuseContextOps, std::optional<bool>(true));
  for (size_t i = 0; i + 2 < plan.rows.size(); ++i)
    EXPECT_EQ(plan.rows[i].reuseContextOps, std::optional<bool>(false)) << plan.rows[i].name;
  EXPECT_EQ(ctx.variants, tc.variants);
  EXPECT_EQ(ctx.arithmetic, tc.arithmetic);
  // The last adds gemv_f16 to gemm's list, last, and changes nothing else.
  const auto& gemv = plan.rows.back();
  EXPECT_EQ(gemv.name, "+ gemv");
  EXPECT_EQ(gemv.reuseContextOps, std::optional<bool>(true));
  auto gemm = ctx.variants.at("gemm");
  gemm.push_back("gemv_f16");
  EXPECT_EQ(gemv.variants.at("gemm"), gemm);
  for (const auto& [family, list] : ctx.variants)
    if (family != "gemm") {
      EXPECT_EQ(gemv.variants.at(family), list) << family;
    }
  EXPECT_EQ(f16.name, "+ f16 arithmetic");
  EXPECT_EQ(f16.arithmetic, "f16");
  EXPECT_EQ(f16.weights, "f16");
  EXPECT_EQ(f16.precision, "f16");
  EXPECT_EQ(tc.name, "+ tensor cores");
  EXPECT_EQ(tc.arithmetic, "f16");  // inherited
  // The tensor-core row adds the coopmat variants, each last in its family's list (the
  // variant a row adds runs unless a timed one is faster), and changes nothing else.
  for (const auto& [family, coopmat] : std::map<std::string, std::string>{
           {"gemm", "coopmat_f16"}, {"conv", "coopmat_f16"}, {"attention", "flash_coopmat_f16"}}) {
    auto before = f16.variants.at(family);
    EXPECT_EQ(std::find(before.begin(), before.end(), coopmat), before.end()) << family;
    before.push_back(coopmat);
    EXPECT_EQ(tc.variants.at(family), before) << family;
  }
  EXPECT_EQ(tc.variants.at("groupnorm"), f16.variants.at("groupnorm"));
  // The rows' GroupNorm is one_pass (the file's comment says why two_pass is not in them yet).
  for (const auto& row : plan.rows)
    for (const auto& v : row.variants.at("groupnorm")) EXPECT_EQ(v.rfind("one_pass", 0), 0u) << row.name << ": " << v;
}

// A row whose added variant the device cannot run at all is printed as skipped with the
// reason, left out of the table's measured rows, and the ablation goes on (lavapipe has
// no cooperative matrices).
TEST_F(Cli, AblateSkipsTheTensorCoreRowWithoutCooperativeMatrices) {
  const Result devices = run({"devices", "--device", "vulkan:0"});
  if (devices.exitCode != 0) GTEST_SKIP() << "no Vulkan device: " << devices.describe();
  if (!std::regex_search(devices.out, std::regex("cooperative matrix +no")))
    GTEST_SKIP() << "this Vulkan device has cooperative matrices: " << devices.out;
  TempDir d;
  const std::string plan = d.path() + "/tc.yaml";
  std::ofstream(plan) << "format: 1\nname: tc\nrows:\n"
                         "  - name: f16 arithmetic\n    backend: vulkan\n    precision: f16\n    arithmetic: f16\n"
                         "    weights: f16\n    max_abs: 0\n    variants: {gemm: [direct_f16]}\n"
                         "  - name: + tensor cores\n    variants: {gemm: [direct_f16, coopmat_f16]}\n";
  const Result r = run(ablateArgs(plan, d.path() + "/out"));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("row 2/2: + tensor cores: skipped: gemm coopmat_f16: device lacks cooperative matrices\n"),
            std::string::npos)
      << r.out;
  const auto j = nlohmann::json::parse(slurp(d.path() + "/out/ablation.json"));
  ASSERT_EQ(j.at("rows").size(), 1u);  // measured: the first row only
  EXPECT_EQ(j.at("rows")[0].at("variants_run").at("gemm/direct_f16").get<int>() > 0, true);
  ASSERT_EQ(j.at("skipped_rows").size(), 1u);
  EXPECT_EQ(j.at("skipped_rows")[0].at("row"), "+ tensor cores");
  EXPECT_EQ(j.at("skipped_rows")[0].at("reason"), "gemm coopmat_f16: device lacks cooperative matrices");
  EXPECT_EQ(j.at("skipped_rows")[0].at("index"), 1);
  const std::string md = slurp(d.path() + "/out/ablation.md");
  EXPECT_NE(md.find("| + tensor cores | skipped: gemm coopmat_f16: device lacks cooperative matrices |"), std::string::npos)
      << md;
  EXPECT_EQ(slurp(d.path() + "/out/ablation.csv").find("tensor cores"), std::string::npos);
}

TEST_F(Cli, AblateBadConfigIsOneLine) {
  TempDir d;
  std::ofstream(d.path() + "/bad.yaml") << "format: 1\nname: x\nrows:\n  - name: a\n    variants: {attention: [warp]}\n";
  expectOneLineError({"ablate", "--model", kA, "--ablation", d.path() + "/bad.yaml"}, {"bad.yaml", "warp"});
  std::ofstream(d.path() + "/bad2.yaml") << "format: 1\nrows:\n  - name: a\n    speed: fast\n";
  expectOneLineError({"ablate", "--model", kA, "--ablation", d.path() + "/bad2.yaml"}, {"bad2.yaml", "speed"});
  expectOneLineError({"ablate", "--merge", d.path()}, {"ablation.json"});
  std::ofstream(d.path() + "/ablation.json") << "{\"rows\": 3}";
  expectOneLineError({"ablate", "--merge", d.path()}, {"ablation.json", "not an sdspeed ablate result"});
  expectOneLineError({"ablate", "--replot", d.path()}, {"ablation.json", "not an sdspeed ablate result"});
  std::ofstream(d.path() + "/bad4.yaml") << "format: 1\nrows:\n  - name: a\n    release: sometimes\n";
  expectOneLineError({"ablate", "--model", kA, "--ablation", d.path() + "/bad4.yaml"}, {"bad4.yaml", "release", "true or false"});
  expectOneLineError({"ablate", "--model", kA, "--keep-resident=1"}, {"--keep-resident", "takes no value"});
  std::ofstream(d.path() + "/bad5.yaml") << "format: 1\nrows:\n  - name: a\n    backend: metal\n";
  expectOneLineError({"ablate", "--model", kA, "--ablation", d.path() + "/bad5.yaml"}, {"bad5.yaml", "backend", "opencl or vulkan"});
  std::ofstream(d.path() + "/bad6.yaml") << "format: 1\nrows:\n  - name: a\n    context_ops: twice\n";
  expectOneLineError({"ablate", "--model", kA, "--ablation", d.path() + "/bad6.yaml"},
                     {"bad6.yaml", "context_ops", "once or every-step"});
  std::ofstream(d.path() + "/bad3.yaml") << "format: [1]\nrows: []\n";
  expectOneLineError({"ablate", "--model", kA, "--ablation", d.path() + "/bad3.yaml"}, {"bad3.yaml"});
}

}  // namespace

// The memory ablation's quantized rows (issue #20) load: each inherits the rows before it
// and changes the weight format only.
TEST(AblationPlan, MemoryPlanHasTheQuantizedRows) {
  const auto plan = sdspeed::loadAblationPlan(std::string(SDSPEED_SOURCE_DIR) + "/configs/ablation/memory.yaml");
  ASSERT_GE(plan.rows.size(), 3u);
  const auto& int8 = plan.rows[plan.rows.size() - 2];
  const auto& int4 = plan.rows.back();
  EXPECT_EQ(int8.name, "+ int8 weights");
  EXPECT_EQ(int8.weights, "int8");
  EXPECT_EQ(int4.name, "+ int4 weights");
  EXPECT_EQ(int4.weights, "int4");
  EXPECT_EQ(int4.budget, plan.rows[plan.rows.size() - 3].budget);
}
