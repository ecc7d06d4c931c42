// `sdspeed run` and `sdspeed shapes` end to end: the fixture reproduced through the
// command line (saved latents, decoded pixels, the PNG, the JSON report), and one
// clear error line for each kind of bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "pipeline/safetensors.h"
#include "test_support.h"
#include "tuning/database.h"
#include "tuning/shape_set.h"

namespace fs = std::filesystem;
using sdspeed_test::Cli;
using sdspeed_test::Result;
using sdspeed_test::slurp;
using sdspeed_test::TempDir;

namespace {

const std::string kA = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
const std::string kRef = kA + "/reference.safetensors";

double relL2(const std::vector<float>& a, const std::vector<float>& b) {
  double n = 0, d = 0;
  for (size_t i = 0; i < a.size(); ++i) n += (a[i] - b[i]) * (a[i] - b[i]), d += b[i] * b[i];
  return std::sqrt(n / d);
}

// A copy of the fixture folder a test may break.
std::string copyFixture(const TempDir& dir) {
  const std::string to = dir.path() + "/model";
  fs::copy(kA, to, fs::copy_options::recursive);
  return to;
}

class RunCli : public Cli {
 protected:
  std::vector<std::string> fixtureArgs(const std::string& model) {
    return {"run", "--model", model, "--steps", "4", "--scheduler", "dpmpp2m",
            "--input-ids", kRef + ":input_ids_cond", "--uncond-input-ids", kRef + ":input_ids_uncond",
            "--init-latents", kRef + ":init_latents", "--db-dir", std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned"};
  }
  TempDir out_;
};

TEST_F(RunCli, ReproducesTheFixtureAndWritesEverything) {
  auto args = fixtureArgs(kA);
  const std::string lat = out_.path() + "/lat.safetensors", dec = out_.path() + "/dec.safetensors",
                    png = out_.path() + "/out.png", rep = out_.path() + "/report.json";
  for (const auto& a : {"--save-latents", lat.c_str(), "--save-decoded", dec.c_str(), "-o", png.c_str(), "--report",
                        rep.c_str(), "--profile", "--warmup-ms", "500"})
    args.push_back(a);
  const Result r = run(args);
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  sdspeed::SafetensorsFile ref(kRef), latents(lat), decoded(dec);
  // Within the fixture's tolerance rule (tests/test_sd_fixture.cpp has the per-element check).
  for (int i = 0; i < 4; ++i) {
    const std::string n = "latents_step" + std::to_string(i);
    EXPECT_LE(relL2(latents.toFloat(n), ref.toFloat("dpmpp2m_" + n)), 1e-4) << n;
  }
  EXPECT_LE(relL2(latents.toFloat("final_latents"), ref.toFloat("dpmpp2m_final_latents")), 1e-4);
  EXPECT_EQ(decoded.info("decoded").shape, (std::vector<int64_t>{1, 3, 32, 32}));
  EXPECT_EQ(slurp(png).substr(1, 3), "PNG");
  const auto j = nlohmann::json::parse(slurp(rep));
  EXPECT_FALSE(j.at("random_weights").get<bool>());
  EXPECT_EQ(j.at("time_ms").at("unet_steps").size(), 4u);
  EXPECT_GT(j.at("memory").at("device_high_water_bytes").get<uint64_t>(), 0u);
  for (const char* c : {"text_encoder", "unet", "vae_decoder"}) {
    const auto& m = j.at("memory").at("components").at(c);
    EXPECT_LE(m.at("plans_batch1").at("greedy-by-size").get<uint64_t>(), m.at("plans_batch1").at("naive").get<uint64_t>());
    EXPECT_GE(m.at("plans_batch1").at("greedy-by-size").get<uint64_t>(), m.at("plans_batch1").at("lower-bound").get<uint64_t>());
    EXPECT_GT(m.at("weights_bytes").get<uint64_t>(), 0u);
  }
  EXPECT_FALSE(j.at("unet_profile").empty());
  // Each profile row says where its point came from, in the kinds the component's
  // param_sources count (one kind per row: a UNet instance's nodes share their lookup).
  for (const char* prof : {"unet_profile", "vae_profile"})
    for (const auto& row : j.at(prof)) {
      const std::string kind = row.at("params").get<std::string>();
      EXPECT_TRUE(j.at("param_sources").at(prof == std::string("unet_profile") ? "unet" : "vae_decoder").contains(kind))
          << prof << ": " << row.dump();
    }
  EXPECT_NE(r.out.find("params not exact (a point tuned for another instance or none, or refused): "), std::string::npos)
      << r.out;
  // The timed warm-up (a GPU's default; asked for here, since CPU devices default to one
  // run): runs until 500 ms passed, at most 50 (SdPipeline::kMaxWarmUpRuns).
  for (const char* c : {"text_encoder", "unet", "vae_decoder"}) {
    const auto& s = j.at("setup_ms").at(c);
    const int runs = s.at("warm_up_runs").get<int>();
    EXPECT_GE(runs, 1) << c;
    EXPECT_LE(runs, 50) << c;
    if (runs < 50) {
      EXPECT_GE(s.at("warm_up").get<double>(), 500.0) << c;
    }
  }
  // Ops whose chosen point could not run here are named once, in one stderr line, with why
  // (issue #19), as many as the report counts.
  int fallbacks = 0, notes = 0;
  for (const auto& [c, kinds] : j.at("param_sources").items())
    if (kinds.contains("fallback")) fallbacks += kinds.at("fallback").get<int>();
  for (const std::string& l : r.errLines())
    if (l.find("ran a fallback variant") != std::string::npos) {
      ++notes;
      EXPECT_EQ(l.rfind("sdspeed run: note: " + std::to_string(fallbacks) + " op", 0), 0u) << l;
    }
  EXPECT_EQ(notes, fallbacks ? 1 : 0) << r.err;
  EXPECT_EQ(r.err.find("tuned against other kernel sources"), std::string::npos) << r.err;  // no stale family
  EXPECT_NE(r.out.find("UNet / step"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("UNet profile per iteration"), std::string::npos) << r.out;
}

// A database whose recorded kernel source hash differs from this build's (here conv's, all
// zeros) gets one note naming the family and the file. The device's key is read from the
// note of a run with no database, so the test holds on any device; the checked-in
// databases get no such note (ReproducesTheFixtureAndWritesEverything). Then a tune of one
// of the two conv entries (session 41's capped re-tune, in small): the other keeps the
// zeros as its own `source_hash`, and the note counts it, 1 of 2.
TEST_F(RunCli, StaleDatabaseFamiliesAreNamed) {
  TempDir empty, db, sweeps;
  const std::string stale = "tuned against other kernel sources";
  auto runWith = [&](const std::string& dir) {
    auto args = fixtureArgs(kA);
    for (const auto& a : {"--steps", "1", "--no-decode", "--warmup-ms", "0"}) args.push_back(a);
    *(std::find(args.begin(), args.end(), "--db-dir") + 1) = dir;
    const Result r = run(args);
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    return r;
  };
  auto notes = [&](const Result& r) {
    std::vector<std::string> found;
    for (const std::string& l : r.errLines())
      if (l.find(stale) != std::string::npos) found.push_back(l);
    return found;
  };
  const Result none = runWith(empty.path());
  const size_t at = none.err.find("(key ");
  ASSERT_NE(at, std::string::npos) << none.err;
  const std::string key = none.err.substr(at + 5, none.err.find(')', at) - at - 5);
  EXPECT_EQ(none.err.find(stale), std::string::npos) << none.err;
  const std::string file = db.path() + "/" + key + ".yaml";
  auto entry = [](int cout) {
    return "  - instance: conv 1x4x6x6 bias=1 cout=" + std::to_string(cout) +
           " k=3 pad=1 residual=0 stride=1 temb=0 f32.buffer.nchw\n    best: direct\n    variants:\n"
           "      direct: {params: \"CB=2,CO=8,PX=2,WGX=16,WGY=4\", median_us: 20, min_us: 10}\n";
  };
  std::ofstream(file) << "format: 1\ndevice:\n  key: " << key
                      << "\n  name: test\n  driver: test\nsource_hashes: {conv: 000000000000}\nentries:\n"
                      << entry(4) << entry(8);
  const auto all = notes(runWith(db.path()));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_NE(all[0].find("the conv entries"), std::string::npos) << all[0];
  EXPECT_NE(all[0].find(db.path()), std::string::npos) << all[0];

  const Result tuned = run({"tune", "--op", "conv", "--shape", "1x4x6x6", "--attrs", "cout=4", "--variant", "direct",
                            "--budget", "1", "--db-dir", db.path(), "--sweep-dir", sweeps.path()});
  ASSERT_EQ(tuned.exitCode, 0) << tuned.describe();
  // The file's own stamps, as TuningDatabase reads them: conv's hash is the tune's, the
  // entry it rebuilt (cout 4) is the family's, the other keeps the zeros.
  auto stamps = [&] {
    const sdspeed::TuningDatabase t = sdspeed::TuningDatabase::load(file);
    std::map<std::string, std::string> m;
    for (const auto& e : t.entries()) m[e.instance.text().substr(0, e.instance.text().find(" k="))] = e.sourceHash;
    EXPECT_NE(t.sourceHashes.at("conv"), "000000000000");
    return m;
  };
  const std::map<std::string, std::string> want = {{"conv 1x4x6x6 bias=1 cout=4", ""},
                                                   {"conv 1x4x6x6 bias=1 cout=8", "000000000000"}};
  EXPECT_EQ(stamps(), want);
  const auto one = notes(runWith(db.path()));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_NE(one[0].find("the conv (1 of 2) entries"), std::string::npos) << one[0];
  // A tune of the stale entry where no point runs (conv1x1 on a 3x3 problem: unsupported)
  // leaves it as it was, stamped: not erased.
  const Result none1x1 = run({"tune", "--op", "conv", "--shape", "1x4x6x6", "--attrs", "cout=8", "--variant",
                              "conv1x1", "--budget", "1", "--db-dir", db.path(), "--sweep-dir", sweeps.path()});
  ASSERT_EQ(none1x1.exitCode, 0) << none1x1.describe();
  EXPECT_EQ(stamps(), want);
  // The same file under an OpenCL key's legacy name (no API word), which the chooser
  // reads: checked too, not "no tuning database".
  if (key.rfind("opencl-", 0) == 0) {
    TempDir legacy;
    const std::string old = legacy.path() + "/" + key.substr(7) + ".yaml";
    std::filesystem::copy_file(file, old);
    const Result r = runWith(legacy.path());
    const auto named = notes(r);
    ASSERT_EQ(named.size(), 1u) << r.err;
    EXPECT_NE(named[0].find(old), std::string::npos) << named[0];
    EXPECT_EQ(r.err.find("no tuning database"), std::string::npos) << r.err;
  }
}

// Released components (the default) and --keep-resident compute the same pixels; the
// report says which policy ran, each component's setup apart from the totals, and the
// peak in GB and GiB, lower when released.
TEST_F(RunCli, ReleasedAndKeptResidentDecodeTheSamePixels) {
  std::map<bool, std::vector<float>> decoded;
  std::map<bool, nlohmann::json> report;
  for (bool keep : {false, true}) {
    auto args = fixtureArgs(kA);
    const std::string tag = keep ? "resident" : "released";
    const std::string dec = out_.path() + "/" + tag + ".safetensors", rep = out_.path() + "/" + tag + ".json",
                      png = out_.path() + "/" + tag + ".png";
    for (const auto& a : {"--steps", "2", "--save-decoded", dec.c_str(), "--report", rep.c_str(), "-o", png.c_str()})
      args.push_back(a);
    if (keep) args.push_back("--keep-resident");
    const Result r = run(args);
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_NE(r.out.find(keep ? "components: kept resident" : "components: released"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" GiB)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("unet         setup "), std::string::npos) << r.out;
    decoded[keep] = sdspeed::SafetensorsFile(dec).toFloat("decoded");
    report[keep] = nlohmann::json::parse(slurp(rep));
    const auto& j = report[keep];
    EXPECT_EQ(j.at("memory").at("components_released").get<bool>(), !keep);
    const auto peak = j.at("memory").at("device_high_water_bytes").get<uint64_t>();
    EXPECT_DOUBLE_EQ(j.at("memory").at("device_high_water_gb").get<double>(), peak / 1e9);
    EXPECT_DOUBLE_EQ(j.at("memory").at("device_high_water_gib").get<double>(), peak / double(1ull << 30));
    for (const char* c : {"text_encoder", "unet", "vae_decoder"}) {
      const auto& s = j.at("setup_ms").at(c);
      EXPECT_GT(s.at("load").get<double>(), 0.0) << c;
      EXPECT_GT(s.at("warm_up").get<double>(), 0.0) << c;
      EXPECT_DOUBLE_EQ(s.at("setup").get<double>(), s.at("load").get<double>() + s.at("warm_up").get<double>()) << c;
      EXPECT_GT(j.at("memory").at("components").at(c).at("device_footprint_bytes").get<uint64_t>(), 0u) << c;
    }
  }
  EXPECT_EQ(decoded[false], decoded[true]);
  EXPECT_LT(report[false].at("memory").at("device_high_water_bytes").get<uint64_t>(),
            report[true].at("memory").at("device_high_water_bytes").get<uint64_t>());
  // Released: the peak is the largest component's own footprint (nothing else is live).
  uint64_t largest = 0;
  for (const auto& [c, m] : report[false].at("memory").at("components").items())
    largest = std::max(largest, m.at("device_footprint_bytes").get<uint64_t>());
  EXPECT_EQ(report[false].at("memory").at("device_high_water_bytes").get<uint64_t>(), largest);
}

// --context-ops once (the default) against every-step on the fixture: the same decoded
// pixels; once reuses the context's K and V ops at steps 2 and 3 and says so (report line
// and JSON), every-step reuses none.
TEST_F(RunCli, ContextOpsOnceDecodesTheSamePixelsAsEveryStep) {
  std::map<std::string, std::vector<float>> decoded;
  for (const std::string mode : {"once", "every-step"}) {
    auto args = fixtureArgs(kA);
    const std::string dec = out_.path() + "/" + mode + ".safetensors", rep = out_.path() + "/" + mode + ".json";
    for (const auto& a : {"--steps", "3", "--save-decoded", dec.c_str(), "--report", rep.c_str(), "--context-ops", mode.c_str()})
      args.push_back(a);
    const Result r = run(args);
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    decoded[mode] = sdspeed::SafetensorsFile(dec).toFloat("decoded");
    const auto j = nlohmann::json::parse(slurp(rep));
    EXPECT_EQ(j.at("run").at("context_ops"), mode);
    const auto reused = j.at("time_ms").at("unet_reused_ops").get<std::vector<int>>();
    ASSERT_EQ(reused.size(), 3u);
    EXPECT_EQ(reused[0], 0);
    if (mode == "once") {
      EXPECT_GT(reused[1], 0);
      EXPECT_EQ(reused[2], reused[1]);
      EXPECT_NE(r.out.find(std::to_string(reused[1]) + " ops of the text context (K and V) ran once, at the first step, "
                           "reused by 2 later calls"),
                std::string::npos)
          << r.out;
    } else {
      EXPECT_EQ(reused, std::vector<int>(3, 0));
      EXPECT_EQ(r.out.find("ops of the text context"), std::string::npos) << r.out;
    }
  }
  EXPECT_EQ(decoded["once"], decoded["every-step"]);
}

TEST_F(RunCli, RandomWeightsSaySoFirst) {
  const std::string noDb = out_.path() + "/no-db";
  const Result r = run({"run", "--model", kA, "--random-weights", "--steps", "1", "--no-decode", "--db-dir", noDb});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(r.out.rfind("RANDOM WEIGHTS", 0), 0u) << r.out;
  // No database for the device: said once on stderr, with where it looked (issue #19).
  int notes = 0;
  for (const std::string& l : r.errLines())
    if (l.find("no tuning database for") != std::string::npos) {
      ++notes;
      EXPECT_CONTAINS(l, noDb + "/");
      EXPECT_CONTAINS(l, "no such --db-dir folder");
    }
  EXPECT_EQ(notes, 1) << r.err;
  EXPECT_NE(r.out.find("seeded token ids"), std::string::npos) << r.out;
}

TEST_F(RunCli, VariantOverrideIsWhatRuns) {
  auto args = fixtureArgs(kA);
  const std::string rep = out_.path() + "/r.json";
  for (const auto& a : {"--variant", "attention=naive,conv=im2col_gemm", "--no-decode", "--steps", "1", "--report",
                        rep.c_str()})
    args.push_back(a);
  const Result r = run(args);
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  const auto v = nlohmann::json::parse(slurp(rep)).at("variants").at("unet");
  EXPECT_TRUE(v.contains("attention/naive")) << v.dump();
  EXPECT_FALSE(v.contains("attention/flash")) << v.dump();
  EXPECT_TRUE(v.contains("conv/im2col_gemm")) << v.dump();
}

TEST_F(RunCli, ShapesListsEveryInstanceOnce) {
  const std::string path = out_.path() + "/tiny.yaml";
  const Result r = run({"shapes", "--model", kA, "-o", path});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  const auto entries = sdspeed::loadShapeSet(path);
  int unetConvs = 0;
  for (const auto& e : entries) unetConvs += (e.op == "conv" && e.component == "unet") ? e.count : 0;
  // tiny-sd-a's UNet: conv_in, 5 ResNets x 2 + 3 shortcuts (1 down, 2 up), 1 down- and 1
  // upsampler, 4 mid-block convs... counted from the graph: every conv once per call.
  EXPECT_EQ(unetConvs, 35);
}

TEST_F(RunCli, BadInputIsOneLine) {
  expectOneLineError({"run", "--model", "/no/such/model"}, {"/no/such/model", "no such model"});
  expectOneLineError({"run", "--model", kA, "-W", "33", "-H", "32"}, {"multiples of"});
  expectOneLineError({"run", "--model", kA, "--scheduler", "heun"}, {"heun"});
  expectOneLineError({"run", "--model", kA, "--context-ops", "twice"}, {"--context-ops", "once or every-step", "twice"});
  // PoCL has no cl_khr_fp16: the families with half kernels cannot run them here.
  expectOneLineError({"run", "--model", kA, "--arithmetic", "f16", "--input-ids", kRef + ":input_ids_cond",
                      "--uncond-input-ids", kRef + ":input_ids_uncond", "--db-dir",
                      std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned"},
                     {"no variant of", "--arithmetic f16 needs a device that computes in half"});
  expectOneLineError({"run", "--model", kA, "--prompt", "a cat"}, {"no tokenizer", "--input-ids"});
  expectOneLineError({"run", "--model", kA, "--variant", "attention=bogus"}, {"bogus"});
  // A repeated list option keeps every value: the first --variant's bad name is found.
  expectOneLineError({"run", "--model", kA, "--variant", "attention=bogus", "--variant", "conv=direct"}, {"bogus"});
  expectOneLineError({"run", "--model", kA + "/single_file/model.safetensors"}, {"--config"});
  expectOneLineError({"run", "--model", kA, "--keep-resident=yes"}, {"--keep-resident", "takes no value"});
  expectOneLineError({"run", "--model", kA, "--warmup-ms", "-1"}, {"--warmup-ms", "negative"});
  expectOneLineError({"run", "--model", kA, "--warmup-ms", "soon"}, {"--warmup-ms", "soon"});
  expectOneLineError({"run", "--model", kA, "--warmup-ms", "100", "--no-warmup"}, {"--warmup-ms", "--no-warmup"});
  expectOneLineError({"run", "--model", kA, "--keep-resident", "yes"}, {"'yes'", "--keep-resident", "takes no value"});
  expectOneLineError({"run", "--model", kA, "--input-ids", kRef + ":no_such", "--uncond-input-ids",
                      kRef + ":input_ids_uncond"},
                     {"no_such"});
}

// Issue #19 item 2: sizes the machine cannot hold are one error line naming the config
// key or flag, exit 2, before anything large is allocated: under a 4 GB address-space
// limit and in seconds (before the estimate, the absurd config took 15 s to exhaust the
// limit, or without one grew until the OOM killer ended it; --planner none at 4096x4096
// aborted inside PoCL).
TEST_F(RunCli, AbsurdSizesFailBeforeAllocating) {
  TempDir tmp;
  const std::string m = copyFixture(tmp);
  std::string cfg = slurp(m + "/unet/config.json");
  cfg.replace(cfg.find("\"layers_per_block\": 2"), 21, "\"layers_per_block\": 1000000000");
  std::ofstream(m + "/unet/config.json") << cfg;
  shellPrefix_ = "ulimit -v 4000000; ";
  auto timed = [&](const std::vector<std::string>& args, const std::vector<std::string>& phrases) {
    const auto t = std::chrono::steady_clock::now();
    std::vector<std::string> full = args;
    if (args[0] == "run")  // the database, so that no note about its absence precedes the error
      full.insert(full.end(), {"--db-dir", std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned"});
    const Result r = run(full);
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    ASSERT_EQ(r.errLines().size(), 1u) << r.describe();
    for (const auto& p : phrases) EXPECT_CONTAINS(r.errLines()[0], p);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), 60);
  };
  timed({"run", "--model", m, "--random-weights", "--steps", "1"},
        {m + "/unet/config.json: layers_per_block: 1000000000", "makes the unet need at least", "memory"});
  timed({"shapes", "--model", m}, {"layers_per_block: 1000000000"});
  timed({"run", "--model", kA, "--random-weights", "--steps", "1", "-W", "16384", "-H", "16384"},
        {"-W 16384 -H 16384 makes the", "memory"});
  // Within the lower bounds, but a buffer per tensor is ~80 GB: the executor's footprint.
  timed({"run", "--model", kA, "--random-weights", "--steps", "1", "-W", "2048", "-H", "2048", "--planner", "none"},
        {"the unet needs an estimated", "--planner none"});
}

void replaceIn(const std::string& path, const std::string& from, const std::string& to) {
  std::string text = slurp(path);
  text.replace(text.find(from), from.size(), to);
  std::ofstream(path) << text;
}

// Issue #19 item 5: a checkpoint with tensors its config does not explain (a text encoder
// config with fewer layers than the file, a UNet config with fewer resnets) is refused
// naming the file and the first such tensor, folder and single file alike; before, the
// run went on and gave another image.
TEST_F(RunCli, ConfigsMustExplainEveryTensor) {
  TempDir tmp;
  const std::string m = copyFixture(tmp);
  replaceIn(m + "/text_encoder/config.json", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1");
  auto args = fixtureArgs(m);
  args.push_back("--no-decode");
  expectOneLineError(args, {m + "/text_encoder/model.safetensors", "the first 'text_model.encoder.layers.1.",
                            "--allow-extra-weights"});
  auto single = args;
  single[2] = m + "/single_file/model.safetensors";
  single.insert(single.end(), {"--config", m});
  expectOneLineError(single, {"single_file/model.safetensors", "text_model.encoder.layers.1."});
  // The UNet: one resnet per down block in the config, two in the files.
  replaceIn(m + "/text_encoder/config.json", "\"num_hidden_layers\": 1", "\"num_hidden_layers\": 2");
  replaceIn(m + "/unet/config.json", "\"layers_per_block\": 2", "\"layers_per_block\": 1");
  expectOneLineError(args, {m + "/unet/diffusion_pytorch_model.safetensors", "the unet config does not explain"});
  expectOneLineError(single, {"single_file/model.safetensors", "the unet and vae configs", "model.diffusion_model."});
}

TEST_F(RunCli, BrokenModelFilesAreOneLine) {
  TempDir tmp;
  const std::string m = copyFixture(tmp);
  const std::string unet = m + "/unet/diffusion_pytorch_model.safetensors";
  // A truncated weights file.
  fs::resize_file(unet, fs::file_size(unet) / 2);
  auto args = fixtureArgs(m);
  args.push_back("--no-decode");
  expectOneLineError(args, {"diffusion_pytorch_model.safetensors"});
  // A config that disagrees with the weights: the file and the tensor are named.
  fs::copy_file(kA + "/unet/diffusion_pytorch_model.safetensors", unet, fs::copy_options::overwrite_existing);
  std::string cfg = slurp(m + "/unet/config.json");
  cfg.replace(cfg.find("\"cross_attention_dim\": 32"), 25, "\"cross_attention_dim\": 48");
  std::ofstream(m + "/unet/config.json") << cfg;
  std::string te = slurp(m + "/text_encoder/config.json");
  te.replace(te.find("\"hidden_size\": 32"), 17, "\"hidden_size\": 48");
  std::ofstream(m + "/text_encoder/config.json") << te;
  expectOneLineError(args, {"model.safetensors", "shape"});
}

}  // namespace

namespace {
class QuantizeCli : public sdspeed_test::Cli {
 protected:
  sdspeed_test::TempDir out_;
};
}  // namespace

// An f16 checkpoint run at f16 weights is uploaded from the mapped file as it is (the
// report and JSON count the bytes; F16FileRunsBitIdenticallyToF16WeightsAtLoad below
// checks it computes the same), and a NaN in the f16 file is still one error line naming
// the tensor and the element (the raw-bits scan of GraphExecutor::uploadFloatFromFile).
TEST_F(QuantizeCli, F16FileIsUploadedAsStoredAndItsNaNNamed) {
  const std::string h = out_.path() + "/f16";
  Result r = run({"quantize", "--model", kA, "--weights", "f16", "-o", h});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  const std::vector<std::string> common = {"--weights", "f16", "--steps", "1", "--no-decode", "--input-ids",
                                           kRef + ":input_ids_cond", "--uncond-input-ids", kRef + ":input_ids_uncond",
                                           "--db-dir", std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned"};
  std::map<std::string, uint64_t> fromFile;
  for (const std::string& m : {kA, h}) {
    const std::string rep = out_.path() + (m == kA ? "/a.json" : "/h.json");
    std::vector<std::string> a = {"run", "--model", m, "--report", rep};
    a.insert(a.end(), common.begin(), common.end());
    r = run(a);
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    fromFile[m] = nlohmann::json::parse(slurp(rep))
                      .at("memory").at("components").at("unet").at("weights_float_from_file_bytes").get<uint64_t>();
    if (m == h) {
      EXPECT_NE(r.out.find("of f32/f16 weights uploaded as the file holds them"), std::string::npos) << r.out;
    }
  }
  EXPECT_EQ(fromFile[kA], 0u);  // F32 on disk, f16 on the device: converted at load
  EXPECT_GT(fromFile[h], 0u);
  // A NaN written into the f16 file (0x7E00 over element 5 of conv_in.weight).
  const std::string unet = h + "/unet/diffusion_pytorch_model.safetensors";
  size_t at = 0;
  {
    sdspeed::SafetensorsFile f(unet);
    const sdspeed::TensorInfo& info = f.info("conv_in.weight");
    ASSERT_EQ(info.dtype, sdspeed::StDType::F16);
    uint64_t headerBytes = 0;
    std::ifstream in(unet, std::ios::binary);
    in.read(reinterpret_cast<char*>(&headerBytes), 8);  // little-endian, as the host
    at = 8 + headerBytes + info.begin + 5 * 2;
  }
  {
    std::fstream io(unet, std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(static_cast<std::streamoff>(at));
    const uint16_t nan = 0x7E00;
    io.write(reinterpret_cast<const char*>(&nan), 2);
    ASSERT_TRUE(io.good());
  }
  std::vector<std::string> a = {"run", "--model", h};
  a.insert(a.end(), common.begin(), common.end());
  expectOneLineError(a, {"unet weight conv_in.weight", "nan at element 5", "non-finite"});
}

// `sdspeed quantize` writes a runnable folder; `run --model OUT --weights int8` uploads its
// blocks as stored (the report and JSON say how many bytes). Bad input: one line, exit 2.
TEST_F(QuantizeCli, WritesARunnableFolderAndNamesBadInput) {
  const std::string q = out_.path() + "/q8", rep = out_.path() + "/r.json";
  Result r = run({"quantize", "--model", kA, "--weights", "int8", "-o", q});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("unet: int8"), std::string::npos) << r.out;
  r = run({"run", "--model", q, "--weights", "int8", "--steps", "2", "--scheduler", "ddim", "--input-ids",
           kRef + ":input_ids_cond", "--uncond-input-ids", kRef + ":input_ids_uncond", "--init-latents",
           kRef + ":init_latents", "--report", rep, "-o", out_.path() + "/x.png"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("uploaded as the file holds them"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weights int8:"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(rep));
  EXPECT_GT(j.at("memory").at("components").at("unet").at("weights_quantized_from_file_bytes").get<uint64_t>(), 0u);
  // A layer kind override: the report says per component what each kind runs in.
  const std::string rep2 = out_.path() + "/r2.json";
  r = run({"run", "--model", kA, "--weights", "int4,conv=int8", "--steps", "1", "--no-decode", "--input-ids",
           kRef + ":input_ids_cond", "--uncond-input-ids", kRef + ":input_ids_uncond", "--report", rep2});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("weights by kind: attn int4"), std::string::npos) << r.out;
  const auto k = nlohmann::json::parse(slurp(rep2)).at("memory").at("components");
  EXPECT_EQ(k.at("unet").at("weights_by_kind").at("conv").at("format"), "int8");
  EXPECT_EQ(k.at("unet").at("weights_by_kind").at("attn").at("format"), "int4");
  EXPECT_EQ(k.at("text_encoder").at("weights_by_kind").count("conv"), 0u);  // CLIP has no convolutions
  EXPECT_EQ(k.at("text_encoder").at("weights_format").get<std::string>(), "int4");
  expectOneLineError({"quantize", "--model", kA, "-o", out_.path() + "/a"}, {"--weights"});
  expectOneLineError({"quantize", "--model", kA, "--weights", "int8"}, {"-o"});
  expectOneLineError({"quantize", "--model", kA, "--weights", "int8", "-o", q}, {"-o", "not an empty folder"});
  expectOneLineError({"quantize", "--model", kA, "--weights", "int9", "-o", out_.path() + "/b"}, {"--weights", "int9"});
  expectOneLineError({"quantize", "--model", kA, "--weights", "int4,convv=int8", "-o", out_.path() + "/c"},
                     {"--weights", "convv"});
  expectOneLineError({"run", "--model", kA, "--weights", "int4,unet.atn=int8", "--steps", "1"}, {"--weights", "atn"});
}

// `sdspeed quantize --weights f16` writes an f16 checkpoint folder, from a model's weights
// or from the seeded weights of --random-weights (issue #22's setup target loads SD 1.5's
// that way). `run --model OUT --weights f16` then computes bit-identically (latents and
// decoded pixels) to the original source run with --weights f16: the file holds the values
// the run's upload rounds to, and reading F16 back is exact. Every tensor on disk is F16.
TEST_F(QuantizeCli, F16FileRunsBitIdenticallyToF16WeightsAtLoad) {
  const std::vector<std::string> ids = {"--input-ids", kRef + ":input_ids_cond", "--uncond-input-ids",
                                        kRef + ":input_ids_uncond", "--init-latents", kRef + ":init_latents",
                                        "--steps", "1", "--scheduler", "ddim", "--weights", "f16"};
  struct Source {
    std::string tag;
    std::vector<std::string> args;  // where the weights come from
  };
  for (const Source& s : {Source{"fixture", {"--model", kA}},
                          Source{"random", {"--model", kA, "--random-weights", "--weights-seed", "7"}}}) {
    SCOPED_TRACE(s.tag);
    const std::string f16 = out_.path() + "/" + s.tag + "-f16";
    std::vector<std::string> q = {"quantize", "--weights", "f16", "-o", f16};
    q.insert(q.end(), s.args.begin(), s.args.end());
    Result r = run(q);
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_NE(r.out.find("unet: f16, 0 tensors quantized"), std::string::npos) << r.out;
    for (const char* file : {"/unet/diffusion_pytorch_model.safetensors", "/vae/diffusion_pytorch_model.safetensors",
                             "/text_encoder/model.safetensors"}) {
      const sdspeed::SafetensorsFile st(f16 + file);
      ASSERT_FALSE(st.tensors().empty()) << file;
      for (const auto& t : st.tensors()) EXPECT_EQ(t.dtype, sdspeed::StDType::F16) << file << " " << t.name;
      if (s.tag == "random") {
        // the metadata names the seed the values came from
        EXPECT_NE(st.metadata().at("sdspeed.source").find("seed 7"), std::string::npos) << file;
      }
    }
    std::map<std::string, std::vector<float>> latents, decoded;
    for (const std::string& from : {std::string("source"), std::string("file")}) {
      const std::string lat = out_.path() + "/" + s.tag + "-" + from + "-lat.safetensors",
                        dec = out_.path() + "/" + s.tag + "-" + from + "-dec.safetensors";
      std::vector<std::string> args = {"run", "--save-latents", lat, "--save-decoded", dec,
                                       "-o", out_.path() + "/" + s.tag + "-" + from + ".png"};
      if (from == "source") args.insert(args.end(), s.args.begin(), s.args.end());
      else args.insert(args.end(), {"--model", f16});
      args.insert(args.end(), ids.begin(), ids.end());
      r = run(args);
      ASSERT_EQ(r.exitCode, 0) << r.describe();
      latents[from] = sdspeed::SafetensorsFile(lat).toFloat("final_latents");
      decoded[from] = sdspeed::SafetensorsFile(dec).toFloat("decoded");
    }
    EXPECT_EQ(latents["source"], latents["file"]);
    EXPECT_EQ(decoded["source"], decoded["file"]);
  }
  expectOneLineError({"quantize", "--model", kA, "--weights-seed", "3", "--weights", "f16", "-o", out_.path() + "/s"},
                     {"--weights-seed", "--random-weights"});
  // An output path under a regular file: named before any work.
  expectOneLineError({"quantize", "--model", kA, "--weights", "f16", "-o", kRef + "/f16"},
                     {"-o", kRef + "/f16", "cannot create"});
}
