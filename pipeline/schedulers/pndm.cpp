// PNDMScheduler (diffusers) with skip_prk_steps: PLMS (linear multistep) only, the
// second timestep repeated as diffusers' warm-up.
#include <cmath>

#include "pipeline/schedulers/common.h"
#include "pipeline/schedulers/config.h"
#include "pipeline/schedulers/scheduler.h"

namespace sdspeed::sched {

namespace {

class Pndm : public Scheduler {
 public:
  explicit Pndm(const ConfigReader& cfg) {
    alphasCumprod_ = sched::alphasCumprod(cfg);
    cfg.require("prediction_type", std::string("epsilon"), "epsilon");
    if (!cfg.boolean("skip_prk_steps", false))
      cfg.unsupported("skip_prk_steps", "false", "the Runge-Kutta warm-up is not implemented; SD configs set true");
    spacing_ = cfg.string("timestep_spacing", "leading");
    if (spacing_ != "leading" && spacing_ != "linspace" && spacing_ != "trailing")
      cfg.unsupported("timestep_spacing", "'" + spacing_ + "'", "linspace, leading or trailing");
    stepsOffset_ = cfg.integer("steps_offset", 0);
    finalAlpha_ = cfg.boolean("set_alpha_to_one", false) ? 1.0f : alphasCumprod_[0];
  }
  const char* name() const override { return "pndm"; }

  void setTimesteps(int n) override {
    const int N = numTrainTimesteps();
    checkSteps("pndm", n, N);
    n_ = n;
    std::vector<float> ts;  // increasing
    if (spacing_ == "linspace") {
      for (double v : linspace(0, N - 1, n)) ts.push_back(static_cast<float>(roundHalfEven(v)));
    } else if (spacing_ == "leading") {
      for (int i = 0; i < n; ++i) ts.push_back(static_cast<float>(i * (N / n) + stepsOffset_));
    } else {
      const double ratio = double(N) / n;
      std::vector<float> dec;
      for (double t = N; t > 0; t -= ratio) dec.push_back(static_cast<float>(roundHalfEven(t)));
      for (auto it = dec.rbegin(); it != dec.rend(); ++it) ts.push_back(*it - 1);
    }
    // plms_timesteps = concat(ts[:-1], ts[-2:-1], ts[-1:])[::-1]
    std::vector<float> plms(ts.begin(), ts.end() - 1);
    if (ts.size() >= 2) plms.push_back(ts[ts.size() - 2]);
    plms.push_back(ts.back());
    timesteps_.assign(plms.rbegin(), plms.rend());
    for (float t : timesteps_) timestepIndex("pndm", t, N);
    ets_.clear();
    counter_ = 0;
    curSample_.clear();
    initNoiseSigma_ = 1.0f;
  }

  std::vector<float> step(std::span<const float> mo, float timestep, std::span<const float> sampleIn) override {
    checkSizes("pndm", mo, sampleIn);
    if (n_ == 0) throw Error("pndm: step before setTimesteps");
    const int N = numTrainTimesteps();
    int t = timestepIndex("pndm", timestep, N);
    int prev = t - N / n_;
    if (counter_ != 1) {
      if (ets_.size() > 3) ets_.erase(ets_.begin(), ets_.end() - 3);
      ets_.emplace_back(mo.begin(), mo.end());
    } else {
      prev = t;
      t = t + N / n_;
    }
    const size_t n = mo.size();
    std::vector<float> m(n);
    std::vector<float> sample(sampleIn.begin(), sampleIn.end());
    const size_t k = ets_.size();
    if (k == 1 && counter_ == 0) {
      m.assign(mo.begin(), mo.end());
      curSample_ = sample;
    } else if (k == 1 && counter_ == 1) {
      for (size_t i = 0; i < n; ++i) m[i] = (mo[i] + ets_[0][i]) / 2.0f;
      sample = curSample_;
      curSample_.clear();
    } else if (k == 2) {
      const auto &e1 = ets_[1], &e2 = ets_[0];
      for (size_t i = 0; i < n; ++i) m[i] = (3.0f * e1[i] - e2[i]) / 2.0f;
    } else if (k == 3) {
      const auto &e1 = ets_[2], &e2 = ets_[1], &e3 = ets_[0];
      for (size_t i = 0; i < n; ++i) m[i] = (23.0f * e1[i] - 16.0f * e2[i] + 5.0f * e3[i]) / 12.0f;
    } else {
      const auto &e1 = ets_[3], &e2 = ets_[2], &e3 = ets_[1], &e4 = ets_[0];
      const float c = static_cast<float>(1.0 / 24);
      for (size_t i = 0; i < n; ++i) m[i] = c * (55.0f * e1[i] - 59.0f * e2[i] + 37.0f * e3[i] - 9.0f * e4[i]);
    }
    if (sample.size() != n) throw Error("pndm: step: sample size changed between steps");
    // _get_prev_sample (formula (9) of the PNDM paper), float32 0-d coefficients.
    const float aT = alphasCumprod_[t];
    const float aPrev = prev >= 0 ? alphasCumprod_[prev] : finalAlpha_;
    const float bT = 1.0f - aT, bPrev = 1.0f - aPrev;
    const float sampleCoeff = std::sqrt(aPrev / aT);
    const float denom = aT * std::sqrt(bPrev) + std::sqrt(aT * bT * aPrev);
    const float diff = aPrev - aT;
    std::vector<float> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = sampleCoeff * sample[i] - diff * m[i] / denom;
    ++counter_;
    return out;
  }

 private:
  std::string spacing_;
  int stepsOffset_ = 0;
  float finalAlpha_ = 1.0f;
  int n_ = 0;
  int counter_ = 0;
  std::vector<std::vector<float>> ets_;
  std::vector<float> curSample_;
};

}  // namespace

std::unique_ptr<Scheduler> makePndm(const ConfigReader& cfg) { return std::make_unique<Pndm>(cfg); }

}  // namespace sdspeed::sched
