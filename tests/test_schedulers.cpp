// pipeline/schedulers: the four schedulers against the tiny-sd-a fixture's 4-step
// classifier-free-guidance loops. The UNet is not needed: the fixture stores every
// step's guided noise prediction, so each loop is replayed from init_latents and our
// own latents are carried from step to step (errors accumulate as in a real run).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>

#include "pipeline/guidance.h"
#include "pipeline/safetensors.h"
#include "pipeline/schedulers/scheduler.h"
#include "test_support.h"

using sdspeed::Scheduler;
using sdspeed_test::errorMessage;

namespace {

const std::string kFixture = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";

const sdspeed::SafetensorsFile& reference() {
  static const sdspeed::SafetensorsFile f(kFixture + "/reference.safetensors");
  return f;
}

struct Diff {
  double maxAbs = 0;
  int64_t maxUlp = 0;
};

Diff compare(const std::vector<float>& got, const std::vector<float>& want) {
  Diff d;
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    d.maxAbs = std::max(d.maxAbs, std::fabs(double(got[i]) - double(want[i])));
    auto key = [](float v) {
      int32_t b = std::bit_cast<int32_t>(v);
      return b < 0 ? int64_t(INT32_MIN) - b : int64_t(b);
    };
    d.maxUlp = std::max(d.maxUlp, int64_t(std::llabs(key(got[i]) - key(want[i]))));
  }
  return d;
}

// Replays scheduler S's loop; returns the worst difference over all steps.
Diff replay(const std::string& s, Scheduler& sched) {
  const auto& ref = reference();
  sched.setTimesteps(4);
  std::vector<int64_t> wantT = ref.toInt64(s + "_timesteps");
  std::vector<float> gotT = sched.timesteps();
  EXPECT_EQ(gotT.size(), wantT.size());
  for (size_t i = 0; i < std::min(gotT.size(), wantT.size()); ++i) EXPECT_EQ(gotT[i], float(wantT[i])) << s << " " << i;
  EXPECT_EQ(sched.initNoiseSigma(), ref.toFloat(s + "_init_noise_sigma")[0]) << s;
  if (ref.contains(s + "_sigmas")) {
    EXPECT_EQ(sched.sigmas(), ref.toFloat(s + "_sigmas")) << s;
  }

  std::vector<float> latents = ref.toFloat("init_latents");
  for (float& v : latents) v = v * sched.initNoiseSigma();
  Diff worst;
  for (size_t i = 0; i < gotT.size(); ++i) {
    std::vector<float> noise = ref.toFloat(s + "_noise_pred_step" + std::to_string(i));
    latents = sched.step(noise, gotT[i], latents);
    Diff d = compare(latents, ref.toFloat(s + "_latents_step" + std::to_string(i)));
    std::printf("%s step %zu: max abs %.3g, max %lld ulp\n", s.c_str(), i, d.maxAbs, (long long)d.maxUlp);
    worst.maxAbs = std::max(worst.maxAbs, d.maxAbs);
    worst.maxUlp = std::max(worst.maxUlp, d.maxUlp);
  }
  Diff fin = compare(latents, ref.toFloat(s + "_final_latents"));
  EXPECT_EQ(fin.maxAbs, compare(latents, ref.toFloat(s + "_latents_step" + std::to_string(gotT.size() - 1))).maxAbs);
  return worst;
}

std::unique_ptr<Scheduler> fromFixtureConfig(const std::string& s) {
  return sdspeed::loadScheduler(s, kFixture + "/scheduler_configs/" + s + ".json");
}

}  // namespace

// Tolerance. With GCC/glibc every step reproduces diffusers bit for bit (0 ulp, printed
// above): the coefficients are the same float32 0-d tensor operations and each element
// goes through the same float operations in the same order. The bound allows what may
// legitimately move a few bits elsewhere: another libm's logf/expf (DPM-Solver's lambdas)
// and our alphas_cumprod, 1 ulp off torch's at 121 of 1000 entries (torch.linspace's
// betas, see AlphasCumprodMatchesDiffusers). 1e-6 x max|latents| is ~8 ulp of the
// largest element and 30-150x below the fixture's own float32-vs-float64 spread
// (max abs 3e-5 .. 1.5e-4, README), so a real error (a wrong coefficient) cannot hide.
constexpr double kRelTol = 1e-6;

TEST(Schedulers, AlphasCumprodMatchesDiffusers) {
  auto s = fromFixtureConfig("ddim");
  Diff d = compare(s->alphasCumprod(), reference().toFloat("alphas_cumprod"));
  std::printf("alphas_cumprod: max abs %.3g, max %lld ulp\n", d.maxAbs, (long long)d.maxUlp);
  EXPECT_LE(d.maxUlp, 1);
}

class SchedulerLoop : public ::testing::TestWithParam<std::string> {};

TEST_P(SchedulerLoop, ReproducesFixture) {
  const std::string s = GetParam();
  auto sched = fromFixtureConfig(s);
  EXPECT_EQ(sched->name(), s);
  Diff d = replay(s, *sched);
  double scale = 0;
  for (float v : reference().toFloat(s + "_final_latents")) scale = std::max(scale, double(std::fabs(v)));
  EXPECT_LE(d.maxAbs, kRelTol * scale) << s << ": worst step differs by " << d.maxUlp << " ulp";
}

// The SD checkpoint's own scheduler_config.json (a PNDMScheduler config without
// timestep_spacing) swapped to each scheduler, as from_config does: every scheduler
// keeps its own default spacing, so the loops are the fixture's.
TEST_P(SchedulerLoop, SwappedFromTheCheckpointConfig) {
  const std::string s = GetParam();
  auto sched = sdspeed::loadScheduler(s, kFixture + "/scheduler/scheduler_config.json");
  Diff d = replay(s, *sched);  // checks timesteps, init_noise_sigma, sigmas and every step
  double scale = 0;
  for (float v : reference().toFloat(s + "_final_latents")) scale = std::max(scale, double(std::fabs(v)));
  EXPECT_LE(d.maxAbs, kRelTol * scale) << s;
  auto sd15 = sdspeed::loadScheduler(s, std::string(SDSPEED_SOURCE_DIR) + "/configs/models/sd15/scheduler/scheduler_config.json");
  sd15->setTimesteps(4);
  sched->setTimesteps(4);
  EXPECT_EQ(sd15->timesteps(), sched->timesteps());
}

INSTANTIATE_TEST_SUITE_P(All, SchedulerLoop, ::testing::Values("ddim", "pndm", "euler", "dpmpp2m"),
                         [](const auto& info) { return info.param; });

TEST(Schedulers, TimestepsForOtherStepCounts) {
  const std::string cfg = kFixture + "/scheduler/scheduler_config.json";
  auto ddim = sdspeed::loadScheduler("ddim", cfg);
  ddim->setTimesteps(50);
  ASSERT_EQ(ddim->timesteps().size(), 50u);
  EXPECT_EQ(ddim->timesteps().front(), 981.0f);
  EXPECT_EQ(ddim->timesteps()[1], 961.0f);
  EXPECT_EQ(ddim->timesteps().back(), 1.0f);
  auto pndm = sdspeed::loadScheduler("pndm", cfg);
  pndm->setTimesteps(50);
  ASSERT_EQ(pndm->timesteps().size(), 51u);
  EXPECT_EQ(std::vector<float>(pndm->timesteps().begin(), pndm->timesteps().begin() + 4),
            (std::vector<float>{981, 961, 961, 941}));
  auto dpm = sdspeed::loadScheduler("dpmpp2m", cfg);
  dpm->setTimesteps(20);
  EXPECT_EQ(dpm->timesteps(), (std::vector<float>{999, 949, 899, 849, 799, 749, 699, 649, 599, 549, 500, 450, 400,
                                                  350, 300, 250, 200, 150, 100, 50}));
  EXPECT_EQ(dpm->sigmas().size(), 21u);
  EXPECT_EQ(dpm->sigmas().back(), 0.0f);
  auto euler = sdspeed::loadScheduler("euler", cfg);
  euler->setTimesteps(20);
  EXPECT_EQ(euler->timesteps().front(), 999.0f);
  EXPECT_EQ(euler->timesteps()[1], static_cast<float>(999.0 - 999.0 / 19));  // fractional: interpolated sigma
  EXPECT_EQ(euler->timesteps().back(), 0.0f);
  EXPECT_GT(euler->sigmas()[1], euler->sigmas()[2]);
  EXPECT_EQ(euler->initNoiseSigma(), euler->sigmas()[0]);
}

TEST(Schedulers, EulerScalesTheModelInput) {
  auto euler = fromFixtureConfig("euler");
  euler->setTimesteps(4);
  const float sigma = euler->sigmas()[0];
  std::vector<float> x = {1.0f, -2.0f, 0.5f};
  euler->scaleModelInput(x, 999.0f);
  const float d = std::sqrt(sigma * sigma + 1.0f);
  EXPECT_EQ(x, (std::vector<float>{1.0f / d, -2.0f / d, 0.5f / d}));
  auto ddim = fromFixtureConfig("ddim");
  ddim->setTimesteps(4);
  std::vector<float> y = {1.0f, 2.0f};
  ddim->scaleModelInput(y, 751.0f);
  EXPECT_EQ(y, (std::vector<float>{1.0f, 2.0f}));
}

TEST(Schedulers, ClearErrors) {
  const std::string ok = R"({"beta_schedule": "scaled_linear", "beta_start": 0.00085, "beta_end": 0.012})";
  EXPECT_CONTAINS(errorMessage([&] { sdspeed::makeScheduler("lms", ok); }),
                  "unknown scheduler 'lms' (known: ddim|pndm|euler|dpmpp2m)");
  EXPECT_CONTAINS(errorMessage([&] { sdspeed::makeScheduler("ddim", "{\"beta_start\": ", "cfg.json"); }),
                  "cfg.json: not valid JSON");
  EXPECT_CONTAINS(errorMessage([&] { sdspeed::makeScheduler("ddim", R"({"beta_start": "small"})", "cfg.json"); }),
                  "cfg.json: ddim: 'beta_start' must be a number, got \"small\"");
  EXPECT_CONTAINS(errorMessage([&] { sdspeed::makeScheduler("euler", R"({"beta_schedule": "cubic"})"); }),
                  "euler: beta_schedule='cubic' is not supported");
  EXPECT_CONTAINS(errorMessage([&] { sdspeed::makeScheduler("pndm", ok); }),
                  "pndm: skip_prk_steps=false is not supported");
  EXPECT_CONTAINS(errorMessage([&] { sdspeed::makeScheduler("ddim", R"({"prediction_type": "v_prediction"})"); }),
                  "ddim: prediction_type='v_prediction' is not supported");
  EXPECT_CONTAINS(errorMessage([&] { sdspeed::makeScheduler("dpmpp2m", R"({"solver_order": 3})"); }),
                  "dpmpp2m: solver_order=3 is not supported");
  EXPECT_CONTAINS(errorMessage([&] { sdspeed::makeScheduler("euler", R"({"timestep_spacing": "even"})"); }),
                  "euler: timestep_spacing='even' is not supported");
  EXPECT_CONTAINS(errorMessage([&] { sdspeed::loadScheduler("ddim", "/nonexistent/scheduler_config.json"); }),
                  "cannot read scheduler config '/nonexistent/scheduler_config.json'");
  auto ddim = sdspeed::makeScheduler("ddim", ok);
  EXPECT_CONTAINS(errorMessage([&] { ddim->setTimesteps(0); }), "num_inference_steps 0 must be in [1, 1000]");
  ddim->setTimesteps(4);
  std::vector<float> a(4), b(5);
  EXPECT_CONTAINS(errorMessage([&] { ddim->step(a, 751.0f, b); }), "noise prediction has 4 values, the sample 5");
  EXPECT_CONTAINS(errorMessage([&] { ddim->step(a, 1000.5f, a); }), "timestep 1000.5");
}

TEST(Schedulers, PythonNonFiniteLiterals) {
  // -Infinity (as diffusers writes lambda_min_clipped) parses; strings that merely
  // contain the word are left alone.
  auto s = sdspeed::makeScheduler(
      "dpmpp2m", R"({"lambda_min_clipped": -Infinity, "_note": "a -Infinity NaN string", "beta_schedule": "scaled_linear"})");
  s->setTimesteps(4);
  EXPECT_EQ(s->timesteps(), (std::vector<float>{999, 749, 500, 250}));
  // A finite clip drops the steps whose lambda is below it (diffusers' clipped_idx).
  auto clipped = sdspeed::makeScheduler("dpmpp2m", R"({"lambda_min_clipped": -2.0, "beta_schedule": "scaled_linear",
                                                       "beta_start": 0.00085, "beta_end": 0.012})");
  clipped->setTimesteps(4);
  EXPECT_LT(clipped->timesteps().front(), 999.0f);
}

TEST(Guidance, ClassifierFreeGuidance) {
  std::vector<float> uncond = {1.0f, -2.0f, 0.25f}, cond = {3.0f, -2.0f, -0.75f};
  std::vector<float> g = sdspeed::classifierFreeGuidance(uncond, cond, 7.5f);
  EXPECT_EQ(g, (std::vector<float>{1.0f + 7.5f * 2.0f, -2.0f, 0.25f + 7.5f * -1.0f}));
  std::vector<float> batched = {1.0f, -2.0f, 0.25f, 3.0f, -2.0f, -0.75f};
  EXPECT_EQ(sdspeed::classifierFreeGuidance(batched, 7.5f), g);
  EXPECT_EQ(sdspeed::classifierFreeGuidance(uncond, cond, 1.0f), cond);
  EXPECT_CONTAINS(errorMessage([&] { sdspeed::classifierFreeGuidance(uncond, batched, 7.5f); }),
                  "uncond has 3 values, cond 6");
}
