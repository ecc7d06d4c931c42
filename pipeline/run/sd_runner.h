// The Stable Diffusion loop of diffusers' StableDiffusionPipeline on an SdPipeline:
// text encoder on [uncond, cond], init latents * init_noise_sigma, per timestep
// scale_model_input -> UNet on the CFG batch -> guidance -> scheduler step, then the
// VAE decoder. Timed per component; what `sdspeed run` and the fixture tests share.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "pipeline/run/sd_pipeline.h"
#include "pipeline/schedulers/scheduler.h"

namespace sdspeed {

struct DiffusionRequest {
  std::vector<int64_t> condIds, uncondIds;  // tokens() ids each
  std::vector<float> initLatents;           // [1, C, h, w] before init_noise_sigma
  int steps = 20;
  float guidance = 7.5f;                    // <= 1: no classifier-free guidance (batch 1)
  bool decode = true;
  bool profile = false;                     // per-op times of the UNet (each step) and the VAE decoder
  // Called after each loop iteration with its index and the latents.
  std::function<void(int, const std::vector<float>&)> onStep;
};

struct OpProfile {
  std::string label, instance, variant;
  double us = 0;  // summed over the steps
  int calls = 0;
};

struct DiffusionResult {
  std::vector<float> textEmbeddings;  // [batch, S, C]
  std::vector<float> finalLatents;    // [1, C, h, w]
  std::vector<float> decoded;         // [1, 3, H, W]
  std::vector<float> timesteps;
  double textMs = 0, vaeMs = 0, totalMs = 0;  // device time (text, VAE), wall time (total)
  std::vector<double> unetMs;                 // device time per loop iteration
  std::vector<OpProfile> profile;             // per UNet node, when requested
  std::vector<OpProfile> vaeProfile;          // per VAE decoder node, when requested
};

// The scheduler named by the model's scheduler_config.json _class_name (pndm for
// SD 1.x's PNDMScheduler), "" if it names none of the four.
std::string defaultSchedulerName(const std::string& schedulerConfigPath);

DiffusionResult runDiffusion(SdPipeline& pipe, Scheduler& scheduler, const DiffusionRequest& req);

}  // namespace sdspeed
