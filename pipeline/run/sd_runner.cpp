#include "pipeline/run/sd_runner.h"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "pipeline/finite.h"
#include "pipeline/guidance.h"
#include "runtime/atomic_file.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {

std::string defaultSchedulerName(const std::string& path) {
  std::string text;
  if (!readFile(path, text)) throw Error(path + ": cannot open the scheduler config");
  const std::pair<const char*, const char*> names[] = {{"\"PNDMScheduler\"", "pndm"},
                                                       {"\"DDIMScheduler\"", "ddim"},
                                                       {"\"EulerDiscreteScheduler\"", "euler"},
                                                       {"\"DPMSolverMultistepScheduler\"", "dpmpp2m"}};
  for (const auto& [cls, name] : names)
    if (text.find(cls) != std::string::npos) return name;
  return "";
}

namespace {

// Adds one run's per-node times to the per-node totals.
void addProfile(const GraphExecutor& exec, const RunTiming& t, std::map<int, OpProfile>& prof) {
  for (const NodeTime& nt : t.nodes) {
    OpProfile& p = prof[nt.node];
    const auto& c = exec.choices()[static_cast<size_t>(nt.node)];
    p.label = exec.graph().nodes()[static_cast<size_t>(nt.node)].label;
    p.instance = c.instance;
    p.variant = c.variant;
    p.params = c.source;
    p.scratchBytes = c.scratchBytes;
    p.streamedBytes = c.streamedBytes;
    p.derivedPerCall = c.derivedPerCall;
    p.us += nt.us;
    ++p.calls;
  }
}

double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Loads and (per the request) warms up one component, timing both into its setup.
void prepare(SdPipeline& pipe, const std::string& component, const DiffusionRequest& req, DiffusionResult& r) {
  ComponentSetup& s = r.setup[component];
  auto t = std::chrono::steady_clock::now();
  pipe.load(component);
  s.loadMs += msSince(t);
  if (!req.warmUp) return;
  t = std::chrono::steady_clock::now();
  s.warmUpRuns += pipe.warmUp(component, req.warmUpMinMs);
  s.warmUpMs += msSince(t);
}

// Frees a component whose output exists, unless the request keeps it resident.
void done(SdPipeline& pipe, const std::string& component, const DiffusionRequest& req, DiffusionResult& r) {
  if (req.keepResident) return;
  const auto t = std::chrono::steady_clock::now();
  pipe.release(component);
  r.setup[component].releaseMs += msSince(t);
}

// The non-finite guard: the runner has these vectors on the host already (the noise
// prediction and the latents come back every step for the scheduler, the image for the
// PNG), so a host scan costs microseconds and no device reduction is needed. `where`
// names the step (or stage) and the component the values came from.
void requireFinite(const std::vector<float>& values, const std::string& where, const std::string& hint = "") {
  const size_t i = firstNonFinite(values);
  if (i == values.size()) return;
  throw RunFailure(where + " holds " + nonFiniteAt(values, i) + (hint.empty() ? "" : " (" + hint + ")"));
}

std::string stepName(size_t i, size_t steps, float t) {
  char b[96];
  std::snprintf(b, sizeof b, "denoising step %zu/%zu (timestep %g)", i + 1, steps, static_cast<double>(t));
  return b;
}

double setupTotalMs(const DiffusionResult& r) {
  double t = 0;
  for (const auto& [c, s] : r.setup) t += s.setupMs() + s.releaseMs;
  return t;
}

}  // namespace

DiffusionResult runDiffusion(SdPipeline& pipe, Scheduler& scheduler, const DiffusionRequest& req) {
  const auto start = std::chrono::steady_clock::now();
  const bool cfg = req.guidance > 1.0f;
  if ((cfg ? 2 : 1) != pipe.batch())
    throw Error("the pipeline was built for batch " + std::to_string(pipe.batch()) + " but guidance " +
                std::to_string(req.guidance) + (cfg ? " needs batch 2" : " needs batch 1"));
  const size_t latentSize = static_cast<size_t>(pipe.unetConfig().inChannels * pipe.latentH() * pipe.latentW());
  if (req.initLatents.size() != latentSize)
    throw Error("init latents need " + std::to_string(latentSize) + " values, given " + std::to_string(req.initLatents.size()));
  DiffusionResult r;
  r.keptResident = req.keepResident;
  if (req.keepResident)
    for (const char* c : {"text_encoder", "unet", "vae_decoder"})
      if (req.decode || std::string(c) != "vae_decoder") prepare(pipe, c, req, r);

  // Text: one encoder run on [uncond, cond] (or cond alone without guidance).
  std::vector<int64_t> ids = cfg ? req.uncondIds : req.condIds;
  if (cfg) ids.insert(ids.end(), req.condIds.begin(), req.condIds.end());
  prepare(pipe, "text_encoder", req, r);
  r.textEmbeddings = pipe.encodeText(ids);
  requireFinite(r.textEmbeddings, "the text_encoder output");
  r.textMs = pipe.stats("text_encoder").last.deviceMs;
  done(pipe, "text_encoder", req, r);

  scheduler.setTimesteps(req.steps);
  r.timesteps = scheduler.timesteps();
  std::vector<float> latents = req.initLatents;
  const float sigma = scheduler.initNoiseSigma();
  for (float& v : latents) v *= sigma;
  std::map<int, OpProfile> prof;
  prepare(pipe, "unet", req, r);
  for (size_t i = 0; i < r.timesteps.size(); ++i) {
    const float t = r.timesteps[i];
    std::vector<float> x = latents;
    if (cfg) x.insert(x.end(), latents.begin(), latents.end());
    scheduler.scaleModelInput(x, t);
    const std::vector<float> noise = pipe.predictNoise(x, t, r.textEmbeddings, req.profile);
    requireFinite(noise, stepName(i, r.timesteps.size(), t) + ": the unet noise prediction",
                  "--check-finite names the op that first wrote one");
    const ComponentStats st = pipe.stats("unet");
    r.unetMs.push_back(st.last.deviceMs);
    r.unetReusedOps.push_back(st.last.reusedOps);
    r.unetDispatches.push_back(st.last.dispatches);
    r.unetBarriers.push_back(st.last.barriers);
    if (req.profile) addProfile(pipe.executor("unet"), st.last, prof);
    const std::vector<float> guided = cfg ? classifierFreeGuidance(noise, req.guidance) : noise;
    latents = scheduler.step(guided, t, latents);
    // The noise was finite: the scheduler's own arithmetic (e.g. betas >= 1) did this.
    requireFinite(latents, stepName(i, r.timesteps.size(), t) + ": the latents after the scheduler step",
                  "the unet noise prediction was finite: check the scheduler config");
    if (req.onStep) req.onStep(static_cast<int>(i), latents);
  }
  done(pipe, "unet", req, r);
  for (auto& [node, p] : prof) r.profile.push_back(p);
  r.finalLatents = latents;
  if (req.decode) {
    prepare(pipe, "vae_decoder", req, r);
    r.decoded = pipe.decode(latents, req.profile);
    requireFinite(r.decoded, "the vae_decoder output (the decoded image)", "--check-finite names the op that first wrote one");
    const ComponentStats st = pipe.stats("vae_decoder");
    r.vaeMs = st.last.deviceMs;
    if (req.profile) {
      std::map<int, OpProfile> vprof;
      addProfile(pipe.executor("vae_decoder"), st.last, vprof);
      for (auto& [node, p] : vprof) r.vaeProfile.push_back(p);
    }
    done(pipe, "vae_decoder", req, r);
  }
  r.totalMs = msSince(start) - setupTotalMs(r);
  return r;
}

}  // namespace sdspeed
