// DPMSolverMultistepScheduler (diffusers), algorithm_type dpmsolver++, solver_order 2
// (or 1), solver_type midpoint or heun: DPM-Solver++(2M). First order for the first
// step and, with lower_order_final (< 15 steps) or a zero final sigma, the last.
#include <cmath>

#include "pipeline/schedulers/common.h"
#include "pipeline/schedulers/config.h"
#include "pipeline/schedulers/scheduler.h"

namespace sdspeed::sched {

namespace {

struct AlphaSigma {
  float alpha, sigma, lambda;
};

// _sigma_to_alpha_sigma_t and lambda = log(alpha) - log(sigma), float32 as torch does.
AlphaSigma alphaSigma(float sigma) {
  const float alpha = 1.0f / std::sqrt(sigma * sigma + 1.0f);
  const float s = sigma * alpha;
  return {alpha, s, std::log(alpha) - std::log(s)};
}

class Dpmpp2m : public Scheduler {
 public:
  explicit Dpmpp2m(const ConfigReader& cfg) {
    alphasCumprod_ = sched::alphasCumprod(cfg);
    cfg.require("prediction_type", std::string("epsilon"), "epsilon");
    cfg.require("algorithm_type", std::string("dpmsolver++"), "dpmsolver++");
    cfg.require("thresholding", false, false);
    cfg.require("use_karras_sigmas", false, false);
    cfg.require("use_exponential_sigmas", false, false);
    cfg.require("use_beta_sigmas", false, false);
    cfg.require("use_lu_lambdas", false, false);
    cfg.require("use_flow_sigmas", false, false);
    cfg.require("use_dynamic_shifting", false, false);
    cfg.require("euler_at_final", false, false);
    if (cfg.has("variance_type")) cfg.unsupported("variance_type", cfg.raw("variance_type").dump(), "only null");
    order_ = cfg.integer("solver_order", 2);
    if (order_ != 1 && order_ != 2) cfg.unsupported("solver_order", std::to_string(order_), "1 or 2");
    solverType_ = cfg.string("solver_type", "midpoint");
    if (solverType_ != "midpoint" && solverType_ != "heun")
      cfg.unsupported("solver_type", "'" + solverType_ + "'", "midpoint or heun");
    lowerOrderFinal_ = cfg.boolean("lower_order_final", true);
    spacing_ = cfg.string("timestep_spacing", "linspace");
    if (spacing_ != "leading" && spacing_ != "linspace" && spacing_ != "trailing")
      cfg.unsupported("timestep_spacing", "'" + spacing_ + "'", "linspace, leading or trailing");
    finalType_ = cfg.string("final_sigmas_type", "zero");
    if (finalType_ != "zero" && finalType_ != "sigma_min")
      cfg.unsupported("final_sigmas_type", "'" + finalType_ + "'", "zero or sigma_min");
    stepsOffset_ = cfg.integer("steps_offset", 0);
    lambdaMinClipped_ = cfg.number("lambda_min_clipped", -INFINITY);
    trainSigmas_ = trainSigmas(alphasCumprod_);
  }
  const char* name() const override { return "dpmpp2m"; }

  void setTimesteps(int n) override {
    const int N = numTrainTimesteps();
    checkSteps("dpmpp2m", n, N);
    // clipped_idx = searchsorted(flip(lambda_t), lambda_min_clipped): how many lambdas are below it.
    int clipped = 0;
    for (float ac : alphasCumprod_) {
      const float lambda = std::log(std::sqrt(ac)) - std::log(std::sqrt(1.0f - ac));
      if (lambda < lambdaMinClipped_) ++clipped;
    }
    const int last = N - clipped;
    std::vector<double> ts;
    if (spacing_ == "linspace") {
      std::vector<double> v = linspace(0, last - 1, n + 1);
      for (int i = n; i >= 1; --i) ts.push_back(roundHalfEven(v[i]));
    } else if (spacing_ == "leading") {
      const int ratio = last / (n + 1);
      for (int i = n; i >= 1; --i) ts.push_back(double(i * ratio + stepsOffset_));
    } else {
      const double ratio = double(N) / n;
      for (double t = last; t > 0; t -= ratio) ts.push_back(roundHalfEven(t) - 1);
    }
    timesteps_.clear();
    sigmas_.clear();
    for (double t : ts) {
      timesteps_.push_back(static_cast<float>(t));
      sigmas_.push_back(static_cast<float>(interp(t, trainSigmas_)));
    }
    sigmas_.push_back(finalType_ == "zero" ? 0.0f : trainSigmas_[0]);
    initNoiseSigma_ = 1.0f;
    outputs_.assign(2, {});
    lowerOrderNums_ = 0;
    stepIndex_ = -1;
  }

  std::vector<float> step(std::span<const float> eps, float timestep, std::span<const float> sample) override {
    checkSizes("dpmpp2m", eps, sample);
    if (timesteps_.empty()) throw Error("dpmpp2m: step before setTimesteps");
    if (stepIndex_ < 0) {
      std::vector<int> hits;
      for (size_t i = 0; i < timesteps_.size(); ++i)
        if (timesteps_[i] == timestep) hits.push_back(static_cast<int>(i));
      if (hits.empty()) throw Error("dpmpp2m: timestep " + std::to_string(timestep) + " is not in the schedule");
      stepIndex_ = hits.size() > 1 ? hits[1] : hits[0];
    }
    const int nsteps = static_cast<int>(timesteps_.size());
    if (stepIndex_ >= nsteps) throw Error("dpmpp2m: step after the last timestep");
    const bool lowerFinal = stepIndex_ == nsteps - 1 &&
                            ((lowerOrderFinal_ && nsteps < 15) || finalType_ == "zero");
    const bool lowerSecond = stepIndex_ == nsteps - 2 && lowerOrderFinal_ && nsteps < 15;
    (void)lowerSecond;  // selects order 2 over 3, which is not implemented

    // convert_model_output: x0 prediction
    const size_t n = sample.size();
    const AlphaSigma cur = alphaSigma(sigmas_[stepIndex_]);
    std::vector<float> x0(n);
    for (size_t i = 0; i < n; ++i) x0[i] = (sample[i] - cur.sigma * eps[i]) / cur.alpha;
    outputs_[0] = std::move(outputs_[1]);
    outputs_[1] = x0;

    const AlphaSigma t = alphaSigma(sigmas_[stepIndex_ + 1]);
    const float h = t.lambda - cur.lambda;
    const float c1 = t.sigma / cur.sigma;
    const float c2 = t.alpha * (std::exp(-h) - 1.0f);
    std::vector<float> out(n);
    if (order_ == 1 || lowerOrderNums_ < 1 || lowerFinal) {
      for (size_t i = 0; i < n; ++i) out[i] = c1 * sample[i] - c2 * x0[i];
    } else {
      const AlphaSigma s1 = alphaSigma(sigmas_[stepIndex_ - 1]);
      const float h0 = cur.lambda - s1.lambda;
      const float r0 = h0 / h;
      const float invR0 = 1.0f / r0;
      const std::vector<float>&m0 = outputs_[1], &m1 = outputs_[0];
      if (solverType_ == "midpoint") {
        const float c3 = 0.5f * c2;
        for (size_t i = 0; i < n; ++i) {
          const float d1 = invR0 * (m0[i] - m1[i]);
          out[i] = c1 * sample[i] - c2 * m0[i] - c3 * d1;
        }
      } else {
        const float c3 = t.alpha * ((std::exp(-h) - 1.0f) / h + 1.0f);
        for (size_t i = 0; i < n; ++i) {
          const float d1 = invR0 * (m0[i] - m1[i]);
          out[i] = c1 * sample[i] - c2 * m0[i] + c3 * d1;
        }
      }
    }
    if (lowerOrderNums_ < order_) ++lowerOrderNums_;
    ++stepIndex_;
    return out;
  }

 private:
  int order_ = 2;
  std::string solverType_, spacing_, finalType_;
  bool lowerOrderFinal_ = true;
  int stepsOffset_ = 0;
  double lambdaMinClipped_ = -INFINITY;
  std::vector<float> trainSigmas_;
  std::vector<std::vector<float>> outputs_;
  int lowerOrderNums_ = 0;
  int stepIndex_ = -1;
};

}  // namespace

std::unique_ptr<Scheduler> makeDpmpp2m(const ConfigReader& cfg) { return std::make_unique<Dpmpp2m>(cfg); }

}  // namespace sdspeed::sched
