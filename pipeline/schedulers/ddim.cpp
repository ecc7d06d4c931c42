// DDIMScheduler (diffusers), eta = 0: deterministic.
#include <algorithm>
#include <cmath>

#include "pipeline/schedulers/common.h"
#include "pipeline/schedulers/config.h"
#include "pipeline/schedulers/scheduler.h"

namespace sdspeed::sched {

namespace {

class Ddim : public Scheduler {
 public:
  explicit Ddim(const ConfigReader& cfg) {
    alphasCumprod_ = sched::alphasCumprod(cfg);
    cfg.require("prediction_type", std::string("epsilon"), "epsilon");
    cfg.require("thresholding", false, false);
    spacing_ = cfg.string("timestep_spacing", "leading");
    if (spacing_ != "leading" && spacing_ != "linspace" && spacing_ != "trailing")
      cfg.unsupported("timestep_spacing", "'" + spacing_ + "'", "linspace, leading or trailing");
    stepsOffset_ = cfg.integer("steps_offset", 0);
    clipSample_ = cfg.boolean("clip_sample", true);
    clipRange_ = static_cast<float>(cfg.number("clip_sample_range", 1.0));
    finalAlpha_ = cfg.boolean("set_alpha_to_one", true) ? 1.0f : alphasCumprod_[0];
  }
  const char* name() const override { return "ddim"; }

  void setTimesteps(int n) override {
    const int N = numTrainTimesteps();
    checkSteps("ddim", n, N);
    n_ = n;
    timesteps_.clear();
    if (spacing_ == "linspace") {
      std::vector<double> v = linspace(0, N - 1, n);
      for (int i = n - 1; i >= 0; --i) timesteps_.push_back(static_cast<float>(roundHalfEven(v[i])));
    } else if (spacing_ == "leading") {
      const int ratio = N / n;
      for (int i = n - 1; i >= 0; --i) timesteps_.push_back(static_cast<float>(i * ratio + stepsOffset_));
    } else {
      const double ratio = double(N) / n;
      for (double t = N; t > 0; t -= ratio) timesteps_.push_back(static_cast<float>(roundHalfEven(t) - 1));
    }
    for (float t : timesteps_) timestepIndex("ddim", t, N);  // steps_offset must keep them in range
    initNoiseSigma_ = 1.0f;
  }

  std::vector<float> step(std::span<const float> eps, float timestep, std::span<const float> sample) override {
    checkSizes("ddim", eps, sample);
    if (n_ == 0) throw Error("ddim: step before setTimesteps");
    const int N = numTrainTimesteps();
    const int t = timestepIndex("ddim", timestep, N);
    const int prev = t - N / n_;
    const float aT = alphasCumprod_[t];
    const float aPrev = prev >= 0 ? alphasCumprod_[prev] : finalAlpha_;
    const float sqrtBeta = std::sqrt(1.0f - aT), sqrtAlpha = std::sqrt(aT);
    const float sqrtAPrev = std::sqrt(aPrev);
    const float dirCoef = std::sqrt(1.0f - aPrev - 0.0f);  // (1 - a_prev - std_dev_t^2)^0.5, eta = 0
    std::vector<float> out(sample.size());
    for (size_t i = 0; i < out.size(); ++i) {
      float x0 = (sample[i] - sqrtBeta * eps[i]) / sqrtAlpha;
      if (clipSample_) x0 = std::clamp(x0, -clipRange_, clipRange_);
      out[i] = sqrtAPrev * x0 + dirCoef * eps[i];
    }
    return out;
  }

 private:
  std::string spacing_;
  int stepsOffset_ = 0;
  bool clipSample_ = true;
  float clipRange_ = 1.0f;
  float finalAlpha_ = 1.0f;
  int n_ = 0;
};

}  // namespace

std::unique_ptr<Scheduler> makeDdim(const ConfigReader& cfg) { return std::make_unique<Ddim>(cfg); }

}  // namespace sdspeed::sched
