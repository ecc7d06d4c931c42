// The pipeline against diffusers: tests/data/tiny-sd-a (see its README) reproduced
// through the runner's code path (SdPipeline + runDiffusion) on the default device.
//
// Tolerances follow the fixture README's rule for a float32 implementation: relative
// L2 error below max(1e-4, 10x the float32-vs-float64 relative difference) and every
// element within 10x the float32-vs-float64 max abs difference of that tensor
// (different summation orders and fused kernels legitimately differ by that much;
// the README's table is the floor of what an exact float32 re-implementation drifts).
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/run/sd_runner.h"
#include "pipeline/safetensors.h"
#include "runtime/device.h"
#include "test_support.h"

namespace sdspeed {
namespace {

const std::string kFixture = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";

struct Spread {
  double maxAbs, relL2;  // float32 vs float64 (the README's table)
};

void expectClose(const std::vector<float>& got, const std::vector<float>& want, Spread f64, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double num = 0, den = 0, worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(static_cast<double>(got[i]) - want[i]);
    ASSERT_TRUE(std::isfinite(got[i])) << what << " element " << i;
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
    if (d > worst) worst = d, at = i;
  }
  const double rel = std::sqrt(num / den);
  EXPECT_LE(rel, std::max(1e-4, 10 * f64.relL2)) << what;
  EXPECT_LE(worst, 10 * f64.maxAbs) << what << ": worst element " << at << " got " << got[at] << " want " << want[at];
  std::printf("%-28s rel L2 %.3g, max abs %.3g (f32 vs f64: %.3g, %.3g)\n", what.c_str(), rel, worst, f64.relL2, f64.maxAbs);
}

std::vector<int64_t> ids(const SafetensorsFile& f, const char* name) { return f.toInt64(name); }

class TinySd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ref_ = new SafetensorsFile(kFixture + "/reference.safetensors");
    ctx_ = new Context(selectDevice(listDevices(), ""), ContextOptions{});
    ModelSource src;
    src.configDir = src.weightsDir = kFixture;
    ExecOptions exec;
    exec.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
    pipe_ = new SdPipeline(*ctx_, src, exec, 16, 16, 2);
  }
  static void TearDownTestSuite() {
    delete pipe_;
    delete ctx_;
    delete ref_;
  }
  static DiffusionRequest request() {
    DiffusionRequest r;
    r.condIds = ids(*ref_, "input_ids_cond");
    r.uncondIds = ids(*ref_, "input_ids_uncond");
    r.initLatents = ref_->toFloat("init_latents");
    r.steps = 4;
    r.guidance = 7.5f;
    return r;
  }
  void loop(const std::string& name, Spread finalSpread, bool decode = false) {
    auto sched = loadScheduler(name, kFixture + "/scheduler_configs/" + name + ".json");
    DiffusionRequest req = request();
    req.decode = decode;
    std::vector<std::vector<float>> steps;
    req.onStep = [&](int, const std::vector<float>& l) { steps.push_back(l); };
    const DiffusionResult r = runDiffusion(*pipe_, *sched, req);
    const auto ts = ref_->toInt64(name + "_timesteps");
    ASSERT_EQ(r.timesteps.size(), ts.size());
    for (size_t i = 0; i < ts.size(); ++i) EXPECT_EQ(static_cast<int64_t>(r.timesteps[i]), ts[i]);
    for (size_t i = 0; i < steps.size(); ++i)
      expectClose(steps[i], ref_->toFloat(name + "_latents_step" + std::to_string(i)), finalSpread,
                  name + "_latents_step" + std::to_string(i));
    expectClose(r.finalLatents, ref_->toFloat(name + "_final_latents"), finalSpread, name + "_final_latents");
    if (decode) expectClose(r.decoded, ref_->toFloat("decoded_ddim"), {3.920e-06, 1.852e-06}, "decoded_ddim");
  }
  static SafetensorsFile* ref_;
  static Context* ctx_;
  static SdPipeline* pipe_;
};
SafetensorsFile* TinySd::ref_ = nullptr;
Context* TinySd::ctx_ = nullptr;
SdPipeline* TinySd::pipe_ = nullptr;

TEST_F(TinySd, TextEmbeddings) {
  std::vector<int64_t> all = ids(*ref_, "input_ids_uncond");
  const auto cond = ids(*ref_, "input_ids_cond");
  all.insert(all.end(), cond.begin(), cond.end());
  expectClose(pipe_->encodeText(all), ref_->toFloat("text_embeddings"), {1.036e-06, 2.296e-07}, "text_embeddings");
}

TEST_F(TinySd, UNetAtT999) {
  auto x = ref_->toFloat("init_latents");
  x.insert(x.end(), x.begin(), x.end());
  const auto out = pipe_->predictNoise(x, 999.0f, ref_->toFloat("text_embeddings"));
  expectClose(out, ref_->toFloat("unet_out_t999"), {1.328e-06, 6.952e-07}, "unet_out_t999");
}

// The step spreads: the README's worst over all steps of each scheduler.
TEST_F(TinySd, Ddim) { loop("ddim", {3.105e-05, 1.456e-06}, true); }
TEST_F(TinySd, Pndm) { loop("pndm", {1.587e-05, 8.744e-07}); }
TEST_F(TinySd, Euler) { loop("euler", {1.489e-04, 1.838e-06}); }
TEST_F(TinySd, DpmSolver) { loop("dpmpp2m", {1.214e-04, 1.604e-06}); }

TEST_F(TinySd, VaeDecodeAlone) {
  expectClose(pipe_->decode(ref_->toFloat("ddim_final_latents")), ref_->toFloat("decoded_ddim"), {7.910e-07, 4.575e-07},
              "decoded_ddim (VAE only)");
}

}  // namespace
}  // namespace sdspeed
