// The Stable Diffusion loop of diffusers' StableDiffusionPipeline on an SdPipeline:
// text encoder on [uncond, cond], init latents * init_noise_sigma, per timestep
// scale_model_input -> UNet on the CFG batch -> guidance -> scheduler step, then the
// VAE decoder. Timed per component; what `sdspeed run` and the fixture tests share.
// Each component is loaded (and warmed up) just before its first run and, unless the
// request keeps them resident, released once its output exists (diffusers' model CPU
// offload): the device holds one component at a time.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "pipeline/run/sd_pipeline.h"
#include "pipeline/schedulers/scheduler.h"
#include "runtime/device_caps.h"

namespace sdspeed {

// The timed warm-up's default for `run` and `ablate` (DiffusionRequest::warmUpMinMs): 500 ms
// on a GPU; one run on a CPU device (PoCL, lavapipe), which has no clocks to bring up, as
// bench's timed warm-up skips them (runtime/timing.h), so CI's runs stay short.
inline double defaultWarmUpMs(const DeviceCaps& dev) { return dev.isCpu() ? 0 : 500; }

struct DiffusionRequest {
  std::vector<int64_t> condIds, uncondIds;  // tokens() ids each
  std::vector<float> initLatents;           // [1, C, h, w] before init_noise_sigma
  int steps = 20;
  float guidance = 7.5f;                    // <= 1: no classifier-free guidance (batch 1)
  bool decode = true;
  bool profile = false;                     // per-op times of the UNet (each step) and the VAE decoder
  // false: text encoder, UNet and VAE decoder each loaded just before they first run and
  // released once their output exists, so the device peak is the largest component's
  // footprint, not the sum. true: all loaded (and warmed up) before the text encoder
  // runs and kept to the end (benchmarks; components the pipeline already holds stay).
  bool keepResident = false;
  // One run on zero inputs of each component after it loads, so the timed runs do not
  // pay one-time costs (Winograd weight transforms, first touch of memory).
  bool warmUp = true;
  // And more of them until this much wall time has passed (at most
  // SdPipeline::kMaxWarmUpRuns): a GPU whose clocks dropped while the component loaded
  // (seconds of host work) ran the first timed steps 2x to 3x slower after a single
  // warm-up run (an H100, session 40: UNet steps 104.9, 69.1, then 31.7 ms, so about
  // 350 ms of work brought the clocks up; `run` asks for 500 on GPUs, where bench's timed
  // warm-up takes 1000 per op: three components' seconds would count against setup).
  double warmUpMinMs = 0;  // run and ablate: defaultWarmUpMs unless --warmup-ms says
  // Called after each loop iteration with its index and the latents.
  std::function<void(int, const std::vector<float>&)> onStep;
};

struct OpProfile {
  std::string label, instance, variant;
  std::string params;  // where its point came from (NodeChoice::source: "exact", "nearest ...", ...)
  double us = 0;  // summed over the steps
  int calls = 0;
  uint64_t scratchBytes = 0;   // its own scratch, alive for it alone (NodeChoice)
  uint64_t streamedBytes = 0;  // weight bytes uploaded ahead of it per call
  bool derivedPerCall = false; // makes its derived weights per call
};

// Wall time outside the timed totals, per component.
struct ComponentSetup {
  double loadMs = 0;     // graph, executor (programs, plan, buffers), weights upload
  double warmUpMs = 0;   // the warm-up runs
  int warmUpRuns = 0;    // how many
  double releaseMs = 0;  // freeing its executor
  double setupMs() const { return loadMs + warmUpMs; }
};

struct DiffusionResult {
  std::vector<float> textEmbeddings;  // [batch, S, C]
  std::vector<float> finalLatents;    // [1, C, h, w]
  std::vector<float> decoded;         // [1, 3, H, W]
  std::vector<float> timesteps;
  double textMs = 0, vaeMs = 0, totalMs = 0;  // device time (text, VAE), wall time (total, setup apart)
  std::vector<double> unetMs;                 // device time per loop iteration
  std::vector<uint64_t> unetDispatches, unetBarriers;  // per iteration (RunTiming's; 0 where not counted)
  std::vector<int> unetReusedOps;             // per iteration: steady ops reused, not run (RunTiming::reusedOps)
  std::vector<OpProfile> profile;             // per UNet node, when requested
  std::vector<OpProfile> vaeProfile;          // per VAE decoder node, when requested
  std::map<std::string, ComponentSetup> setup;  // by component, those this run used
  bool keptResident = false;                    // the request's keepResident
};

// The scheduler named by the model's scheduler_config.json _class_name (pndm for
// SD 1.x's PNDMScheduler), "" if it names none of the four.
std::string defaultSchedulerName(const std::string& schedulerConfigPath);

DiffusionResult runDiffusion(SdPipeline& pipe, Scheduler& scheduler, const DiffusionRequest& req);

}  // namespace sdspeed
