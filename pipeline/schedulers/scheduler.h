// Diffusion schedulers matching diffusers step by step on the CPU (the latents are
// small: 4 x 64 x 64 at 512x512): DDIM (eta 0), PNDM (PLMS, skip_prk_steps), Euler
// discrete and DPM-Solver++ 2M, each built from a diffusers scheduler_config.json the
// way `Cls.from_config(other.config)` does it: keys the config names are used, keys it
// lacks take that scheduler's OWN default (timestep_spacing: "leading" for DDIM/PNDM,
// "linspace" for Euler/DPM-Solver), unknown keys are ignored.
//
// Arithmetic: diffusers computes in float32 torch tensors (0-d tensors for the
// per-step coefficients); every coefficient and element operation here is the same
// float operation in the same order (files built with -ffp-contract=off), so a step
// reproduces diffusers to the last bit or nearly (see tests/test_schedulers.cpp).
//
// The pipeline loop (StableDiffusionPipeline):
//   s->setTimesteps(n); latents *= s->initNoiseSigma();
//   for (float t : s->timesteps()) { x = latents; s->scaleModelInput(x, t); noise = unet(x, t);
//                                     latents = s->step(guided(noise), t, latents); }
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sdspeed {

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual const char* name() const = 0;  // "ddim", "pndm", "euler", "dpmpp2m"

  // diffusers' set_timesteps(n); resets the step state. n >= 1.
  virtual void setTimesteps(int numInferenceSteps) = 0;
  // One entry per loop iteration / UNet evaluation (PNDM repeats one: n + 1 entries).
  // Integral except for Euler with some spacings (diffusers passes them as float).
  const std::vector<float>& timesteps() const { return timesteps_; }
  // Valid after setTimesteps (Euler's depends on the sigmas).
  float initNoiseSigma() const { return initNoiseSigma_; }
  // Euler / DPM-Solver sigma table after setTimesteps (n + 1 values, last = final sigma); empty otherwise.
  const std::vector<float>& sigmas() const { return sigmas_; }
  const std::vector<float>& alphasCumprod() const { return alphasCumprod_; }
  int numTrainTimesteps() const { return static_cast<int>(alphasCumprod_.size()); }

  // diffusers' scale_model_input, in place (identity except Euler). Works on any
  // number of samples (the CFG batch of 2).
  virtual void scaleModelInput(std::span<float> sample, float timestep);
  // One step: the previous (less noisy) sample from the guided noise prediction.
  virtual std::vector<float> step(std::span<const float> noisePred, float timestep,
                                  std::span<const float> sample) = 0;

 protected:
  std::vector<float> alphasCumprod_;
  std::vector<float> timesteps_;
  std::vector<float> sigmas_;
  float initNoiseSigma_ = 1.0f;
};

// "ddim", "pndm", "euler", "dpmpp2m".
const std::vector<std::string>& schedulerNames();

// A scheduler by name from the text of a scheduler_config.json (Python's non-standard
// Infinity / -Infinity / NaN literals accepted). `label` names the config in errors.
// Throws Error for an unknown name, malformed JSON, a key of the wrong type or a
// setting this implementation does not support (named with its value).
std::unique_ptr<Scheduler> makeScheduler(std::string_view name, const std::string& configJson,
                                         const std::string& label = "scheduler config");
// Same, reading the file.
std::unique_ptr<Scheduler> loadScheduler(std::string_view name, const std::string& configPath);

}  // namespace sdspeed
