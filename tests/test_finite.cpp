// The non-finite guard (issue #19 item 1): a NaN or inf in the weights, the initial
// latents, a scheduler config, the latents of a step or an op's output is one error
// line naming where it began and exit status 1, never an all-NaN image with exit 0.
// Every broken input is made here from a copy of tests/data/tiny-sd-a.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "cli_support.h"
#include "pipeline/run/sd_runner.h"
#include "pipeline/safetensors.h"
#include "runtime/opencl/device.h"
#include "test_support.h"

namespace fs = std::filesystem;
using sdspeed_test::Cli;
using sdspeed_test::Result;
using sdspeed_test::slurp;
using sdspeed_test::TempDir;

namespace {

const std::string kA = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
const std::string kRef = kA + "/reference.safetensors";
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// Writes `value` over element `index` of an F32 tensor of a safetensors file, in place
// (the data section starts after the 8-byte header length and the header).
void patchFloat(const std::string& path, const std::string& tensor, size_t index, float value) {
  size_t at = 0;
  {
    sdspeed::SafetensorsFile f(path);
    const sdspeed::TensorInfo& info = f.info(tensor);
    ASSERT_EQ(info.dtype, sdspeed::StDType::F32) << tensor;
    ASSERT_LT(index, static_cast<size_t>(info.numel())) << tensor;
    uint64_t headerBytes = 0;
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(&headerBytes), 8);  // little-endian, as the host
    at = 8 + headerBytes + info.begin + index * sizeof(float);
  }
  std::fstream io(path, std::ios::binary | std::ios::in | std::ios::out);
  io.seekp(static_cast<std::streamoff>(at));
  io.write(reinterpret_cast<const char*>(&value), sizeof value);
  ASSERT_TRUE(io.good()) << path;
}

std::string replaceOnce(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

class FiniteCli : public Cli {
 protected:
  // A copy of the fixture folder this test may break.
  std::string model() {
    const std::string to = tmp_.path() + "/model";
    if (!fs::exists(to)) fs::copy(kA, to, fs::copy_options::recursive);
    return to;
  }
  std::vector<std::string> args(const std::string& m, std::vector<std::string> more = {}) {
    std::vector<std::string> a = {"run", "--model", m, "--steps", "4", "--scheduler", "dpmpp2m",
                                  "--input-ids", kRef + ":input_ids_cond", "--uncond-input-ids",
                                  kRef + ":input_ids_uncond", "--init-latents", kRef + ":init_latents", "--db-dir",
                                  std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned", "-o", tmp_.path() + "/out.png"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  // A failed run: exit status 1 (not a crash) and, last on stderr, one line with each phrase.
  void expectFailedRun(const std::vector<std::string>& a, const std::vector<std::string>& phrases) {
    const Result r = run(a);
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    const auto lines = r.errLines();
    ASSERT_FALSE(lines.empty()) << r.describe();
    for (const auto& p : phrases) EXPECT_NE(lines.back().find(p), std::string::npos) << "missing '" << p << "' in: " << lines.back();
    for (size_t i = 0; i + 1 < lines.size(); ++i)  // anything before it is progress, not a second error
      EXPECT_EQ(lines[i].rfind("step ", 0), 0u) << lines[i];
    EXPECT_FALSE(fs::exists(tmp_.path() + "/out.png")) << "an image was written";
  }
  TempDir tmp_;
};

TEST_F(FiniteCli, NaNWeightNamesComponentTensorAndElement) {
  const std::string m = model();
  patchFloat(m + "/unet/diffusion_pytorch_model.safetensors", "conv_in.weight", 7, kNaN);
  expectOneLineError(args(m), {"unet weight conv_in.weight", "nan at element 7", "non-finite"});
  const Result r = run(args(m));
  EXPECT_EQ(r.exitCode, 2) << r.describe();  // a broken checkpoint is bad input
}

TEST_F(FiniteCli, InfInitLatentsNamesTheFlag) {
  sdspeed::SafetensorsFile ref(kRef);
  std::vector<float> lat = ref.toFloat("init_latents");
  lat[3] = -kInf;
  const std::string file = tmp_.path() + "/lat.safetensors";
  sdspeed::SafetensorsWriter w;
  w.add("init_latents", ref.info("init_latents").shape, lat);
  w.write(file);
  auto a = args(kA);
  a[a.size() - 5] = file + ":init_latents";  // the --init-latents value
  ASSERT_EQ(a[a.size() - 6], "--init-latents");
  expectOneLineError(a, {"--init-latents", "lat.safetensors:init_latents", "-inf at element 3"});
}

// beta_end 2 made 1 - beta negative: NaN sigmas and, before the guard, an all-NaN
// image with exit 0. Now the config is refused naming the file and the key.
TEST_F(FiniteCli, SchedulerBetaEndAboveOneNamesFileAndKey) {
  const std::string m = model(), cfg = m + "/scheduler/scheduler_config.json";
  const std::string text = replaceOnce(slurp(cfg), "\"beta_end\": 0.012", "\"beta_end\": 2");
  std::ofstream(cfg) << text;
  expectOneLineError(args(m), {"scheduler_config.json", "beta_end=2", "[0, 1)"});
}

TEST_F(FiniteCli, VaeScalingFactorZeroNamesFileAndKey) {
  const std::string m = model(), cfg = m + "/vae/config.json";
  const std::string text = replaceOnce(slurp(cfg), "\"scaling_factor\": 0.18215", "\"scaling_factor\": 0");
  std::ofstream(cfg) << text;
  expectOneLineError(args(m), {"vae/config.json", "scaling_factor", "positive"});
}

// One huge but finite conv weight (3e38: the conv's sums overflow to inf wherever the
// input exceeds ~1.1). Without --check-finite the run fails at the first step, naming
// the step and the UNet; with it, the op: conv_in, the op that reads that weight.
TEST_F(FiniteCli, OverflowingWeightNamesTheStepAndWithCheckFiniteTheOp) {
  const std::string m = model();
  patchFloat(m + "/unet/diffusion_pytorch_model.safetensors", "conv_in.weight", 4, 3e38f);
  expectFailedRun(args(m), {"denoising step 1/4", "unet noise prediction", "--check-finite"});
  expectFailedRun(args(m, {"--check-finite"}), {"unet: --check-finite: op ", " conv_in (conv", "of its output"});
}

// --check-finite changes how the run is scheduled (a finish after every op), not what it computes.
TEST_F(FiniteCli, CheckFiniteRunIsTheSameImage) {
  std::map<bool, std::vector<float>> decoded;
  for (bool check : {false, true}) {
    const std::string dec = tmp_.path() + (check ? "/checked.safetensors" : "/plain.safetensors");
    auto a = args(kA, {"--steps", "2", "--save-decoded", dec});
    if (check) a.push_back("--check-finite");
    const Result r = run(a);
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    decoded[check] = sdspeed::SafetensorsFile(dec).toFloat("decoded");
  }
  ASSERT_FALSE(decoded[false].empty());
  EXPECT_EQ(decoded[false], decoded[true]);
}

TEST_F(FiniteCli, CheckFiniteIsInTheUsage) {
  const Result r = run({"run", "--help"});
  EXPECT_NE(r.out.find("--check-finite"), std::string::npos) << r.out;
}

// Every scheduler refuses betas outside [0, 1) (beta_start, beta_end and trained_betas),
// naming the config and the key; the edges of the interval still load.
TEST(FiniteGuard, SchedulerBetasOutsideTheUnitIntervalAreRefused) {
  for (const std::string& name : sdspeed::schedulerNames()) {
    SCOPED_TRACE(name);
    // PNDM refuses configs without skip_prk_steps (SD's all set it); the others ignore it.
    auto withPrk = [](const std::string& json) { return "{\"skip_prk_steps\": true, " + json.substr(1); };
    auto msg = [&](const std::string& json) {
      return sdspeed_test::errorMessage([&] { sdspeed::makeScheduler(name, withPrk(json), "my.json"); });
    };
    for (const char* bad : {R"({"beta_end": 1})", R"({"beta_end": 2, "beta_schedule": "scaled_linear"})",
                            R"({"beta_start": -0.1})", R"({"beta_end": NaN})"}) {
      const std::string m = msg(bad);
      EXPECT_NE(m.find("my.json"), std::string::npos) << bad << ": " << m;
      EXPECT_NE(m.find(std::string(bad).find("beta_start") != std::string::npos ? "beta_start=" : "beta_end="),
                std::string::npos)
          << bad << ": " << m;
      EXPECT_NE(m.find("[0, 1)"), std::string::npos) << bad << ": " << m;
    }
    const std::string m = msg(R"({"num_train_timesteps": 3, "trained_betas": [0.1, 1.5, 0.2]})");
    EXPECT_NE(m.find("trained_betas=1.5 (entry 1)"), std::string::npos) << m;
    EXPECT_NO_THROW(sdspeed::makeScheduler(name, withPrk(R"({"beta_start": 0, "beta_end": 0.999})"))) << "the edges load";
  }
}

// A scheduler whose arithmetic goes wrong at one step (what beta_end >= 1 did before
// the config check): the runner names that step and says the noise was finite.
class NaNAtStep : public sdspeed::Scheduler {
 public:
  NaNAtStep(std::unique_ptr<sdspeed::Scheduler> inner, size_t badStep) : inner_(std::move(inner)), bad_(badStep) {}
  const char* name() const override { return inner_->name(); }
  void setTimesteps(int n) override {
    inner_->setTimesteps(n);
    timesteps_ = inner_->timesteps();
    sigmas_ = inner_->sigmas();
    alphasCumprod_ = inner_->alphasCumprod();
    initNoiseSigma_ = inner_->initNoiseSigma();
    calls_ = 0;
  }
  void scaleModelInput(std::span<float> sample, float t) override { inner_->scaleModelInput(sample, t); }
  std::vector<float> step(std::span<const float> noise, float t, std::span<const float> sample) override {
    std::vector<float> out = inner_->step(noise, t, sample);
    if (calls_++ == bad_) out[out.size() / 2] = kNaN;
    return out;
  }

 private:
  std::unique_ptr<sdspeed::Scheduler> inner_;
  size_t bad_, calls_ = 0;
};

TEST(FiniteGuard, NonFiniteLatentsNameTheStep) {
  using namespace sdspeed;
  static Context ctx(selectDevice(listDevices(), ""), ContextOptions{});
  SafetensorsFile ref(kRef);
  ModelSource src;
  src.configDir = src.weightsDir = kA;
  ExecOptions exec;
  exec.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
  SdPipeline pipe(ctx, src, exec, 16, 16, 2);
  NaNAtStep sched(loadScheduler("ddim", kA + "/scheduler_configs/ddim.json"), 2);
  DiffusionRequest req;
  req.condIds = ref.toInt64("input_ids_cond");
  req.uncondIds = ref.toInt64("input_ids_uncond");
  req.initLatents = ref.toFloat("init_latents");
  req.steps = 4;
  int stepsDone = 0;
  req.onStep = [&](int, const std::vector<float>&) { ++stepsDone; };
  const std::string msg = sdspeed_test::errorMessage([&] { runDiffusion(pipe, sched, req); });
  EXPECT_NE(msg.find("denoising step 3/4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("latents after the scheduler step"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nan at element 512 of 1024"), std::string::npos) << msg;
  EXPECT_NE(msg.find("noise prediction was finite"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(stepsDone, 2) << "the bad step reached onStep";
}

}  // namespace
