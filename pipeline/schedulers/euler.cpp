// EulerDiscreteScheduler (diffusers): linear interpolation of the training sigmas,
// s_churn = 0 (no noise added), final sigma 0 or sigma_min.
#include <algorithm>
#include <cmath>

#include "pipeline/schedulers/common.h"
#include "pipeline/schedulers/config.h"
#include "pipeline/schedulers/scheduler.h"

namespace sdspeed::sched {

namespace {

class Euler : public Scheduler {
 public:
  explicit Euler(const ConfigReader& cfg) {
    alphasCumprod_ = sched::alphasCumprod(cfg);
    cfg.require("prediction_type", std::string("epsilon"), "epsilon");
    cfg.require("interpolation_type", std::string("linear"), "linear");
    cfg.require("use_karras_sigmas", false, false);
    cfg.require("use_exponential_sigmas", false, false);
    cfg.require("use_beta_sigmas", false, false);
    cfg.require("timestep_type", std::string("discrete"), "discrete");
    spacing_ = cfg.string("timestep_spacing", "linspace");
    if (spacing_ != "leading" && spacing_ != "linspace" && spacing_ != "trailing")
      cfg.unsupported("timestep_spacing", "'" + spacing_ + "'", "linspace, leading or trailing");
    finalType_ = cfg.string("final_sigmas_type", "zero");
    if (finalType_ != "zero" && finalType_ != "sigma_min")
      cfg.unsupported("final_sigmas_type", "'" + finalType_ + "'", "zero or sigma_min");
    stepsOffset_ = cfg.integer("steps_offset", 0);
    trainSigmas_ = trainSigmas(alphasCumprod_);
  }
  const char* name() const override { return "euler"; }

  void setTimesteps(int n) override {
    const int N = numTrainTimesteps();
    checkSteps("euler", n, N);
    timesteps_.clear();
    if (spacing_ == "linspace") {
      // np.linspace(0, N - 1, n, dtype=float32)[::-1]
      std::vector<double> v = linspace(0, N - 1, n);
      for (int i = n - 1; i >= 0; --i) timesteps_.push_back(static_cast<float>(v[i]));
    } else if (spacing_ == "leading") {
      for (int i = n - 1; i >= 0; --i) timesteps_.push_back(static_cast<float>(i * (N / n) + stepsOffset_));
    } else {
      const double ratio = double(N) / n;
      for (double t = N; t > 0; t -= ratio) timesteps_.push_back(static_cast<float>(roundHalfEven(t) - 1));
    }
    sigmas_.clear();
    for (float t : timesteps_) sigmas_.push_back(static_cast<float>(interp(t, trainSigmas_)));
    sigmas_.push_back(finalType_ == "zero" ? 0.0f : trainSigmas_[0]);
    const float maxSigma = *std::max_element(sigmas_.begin(), sigmas_.end());
    initNoiseSigma_ = spacing_ == "leading" ? std::sqrt(maxSigma * maxSigma + 1.0f) : maxSigma;
    stepIndex_ = -1;
  }

  void scaleModelInput(std::span<float> sample, float timestep) override {
    if (stepIndex_ < 0) initStepIndex(timestep);
    const float sigma = sigmas_[stepIndex_];
    const float d = std::sqrt(sigma * sigma + 1.0f);
    for (float& v : sample) v = v / d;
  }

  std::vector<float> step(std::span<const float> eps, float timestep, std::span<const float> sample) override {
    checkSizes("euler", eps, sample);
    if (stepIndex_ < 0) initStepIndex(timestep);
    if (stepIndex_ + 1 >= static_cast<int>(sigmas_.size())) throw Error("euler: step after the last timestep");
    const float sigmaHat = sigmas_[stepIndex_] * (0.0f + 1.0f);  // gamma = 0 (s_churn 0)
    const float dt = sigmas_[stepIndex_ + 1] - sigmaHat;
    std::vector<float> out(sample.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const float x0 = sample[i] - sigmaHat * eps[i];
      const float derivative = (sample[i] - x0) / sigmaHat;
      out[i] = sample[i] + derivative * dt;
    }
    ++stepIndex_;
    return out;
  }

 private:
  // diffusers' index_for_timestep: the second match when t occurs twice.
  void initStepIndex(float t) {
    if (timesteps_.empty()) throw Error("euler: step before setTimesteps");
    std::vector<int> hits;
    for (size_t i = 0; i < timesteps_.size(); ++i)
      if (timesteps_[i] == t) hits.push_back(static_cast<int>(i));
    if (hits.empty()) throw Error("euler: timestep " + std::to_string(t) + " is not in the schedule");
    stepIndex_ = hits.size() > 1 ? hits[1] : hits[0];
  }
  std::string spacing_, finalType_;
  int stepsOffset_ = 0;
  std::vector<float> trainSigmas_;
  int stepIndex_ = -1;
};

}  // namespace

std::unique_ptr<Scheduler> makeEuler(const ConfigReader& cfg) { return std::make_unique<Euler>(cfg); }

}  // namespace sdspeed::sched
