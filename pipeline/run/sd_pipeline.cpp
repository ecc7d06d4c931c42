#include "pipeline/run/sd_pipeline.h"

#include <algorithm>
#include <optional>

#include "runtime/cl_error.h"

namespace sdspeed {
namespace {

// Each of b matrices rows x cols -> cols x rows: [B, S, C] (torch's token layout) <->
// [B, C, 1, S] (the graph's token tensors).
std::vector<float> transposeBatched(const std::vector<float>& in, int64_t b, int64_t rows, int64_t cols) {
  std::vector<float> out(in.size());
  for (int64_t n = 0; n < b; ++n)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[static_cast<size_t>((n * cols + c) * rows + r)] = in[static_cast<size_t>((n * rows + r) * cols + c)];
  return out;
}

}  // namespace

std::string ModelSource::describe() const {
  if (random) return "seeded random weights (seed " + std::to_string(seed) + "), architecture from " + configDir;
  if (!singleFile.empty()) return "single-file checkpoint " + singleFile + ", architecture from " + configDir;
  return "diffusers folder " + weightsDir;
}

struct SdPipeline::Part {
  std::string name;
  std::unique_ptr<Graph> graph;
  std::unique_ptr<GraphExecutor> exec;
  RunTiming last;
  bool warmedUp = false;
  uint64_t deviceBytes = 0;  // its footprint window's added bytes, once closed
  int loads = 0;
};

SdPipeline::SdPipeline(Context& ctx, ModelSource source, ExecOptions exec, int64_t latentH, int64_t latentW,
                       int64_t batch)
    : ctx_(ctx), src_(std::move(source)), exec_(std::move(exec)), latentH_(latentH), latentW_(latentW), batch_(batch) {
  unet_ = loadUNetConfig(src_.configDir + "/unet/config.json");
  vae_ = loadVaeConfig(src_.configDir + "/vae/config.json");
  clip_ = loadClipConfig(src_.configDir + "/text_encoder/config.json");
  if (unet_.crossAttentionDim != clip_.hidden)
    throw Error(unet_.path + ": cross_attention_dim " + std::to_string(unet_.crossAttentionDim) +
                " does not match the text encoder's hidden_size " + std::to_string(clip_.hidden));
  if (unet_.inChannels != vae_.latentChannels)
    throw Error(unet_.path + ": in_channels " + std::to_string(unet_.inChannels) + " does not match the VAE's latent_channels " +
                std::to_string(vae_.latentChannels));
}

SdPipeline::~SdPipeline() = default;

std::unique_ptr<WeightSource> SdPipeline::weightsFor(const std::string& component) const {
  if (src_.random) return randomWeights(src_.seed, component);
  if (!src_.singleFile.empty())
    return openSingleFileWeights(src_.singleFile, component, readModelConfigJson(src_.configDir + "/unet/config.json"),
                                 readModelConfigJson(src_.configDir + "/vae/config.json"));
  return openFolderWeights(src_.weightsDir, component);
}

SdPipeline::Part* SdPipeline::find(const std::string& component) const {
  for (const auto& p : parts_)
    if (p->name == component) return p.get();
  return nullptr;
}

bool SdPipeline::resident(const std::string& component) const { return find(component) != nullptr; }

bool SdPipeline::built(const std::string& component) const { return resident(component) || kept_.count(component); }

SdPipeline::Part& SdPipeline::part(const std::string& component) {
  if (Part* p = find(component)) return *p;
  // Validate the name before the previous component's footprint window is closed.
  if (component != "text_encoder" && component != "unet" && component != "vae_decoder")
    throw Error("unknown pipeline component '" + component + "' (text_encoder, unet, vae_decoder)");
  closeWindow();
  window_ = std::make_unique<Context::PeakWindow>(ctx_);
  windowOwner_ = component;
  parts_.push_back(build(component));
  auto k = kept_.find(component);
  parts_.back()->loads = (k == kept_.end() ? 0 : k->second.loads) + 1;
  return *parts_.back();
}

std::unique_ptr<SdPipeline::Part> SdPipeline::build(const std::string& component) {
  auto p = std::make_unique<Part>();
  p->name = component;
  auto weights = weightsFor(component == "vae_decoder" ? "vae" : component);
  const GraphOptions gopt{exec_.fuseActivations};
  if (component == "text_encoder") {
    // transformers saves CLIPTextModel as text_model.*; some exports drop the prefix.
    const std::string prefix =
        src_.random || weights->has("text_model.embeddings.token_embedding.weight") ? "text_model." : "";
    p->graph = std::make_unique<Graph>(buildTextEncoderGraph(clip_, batch_, clip_.positions, prefix, gopt));
  } else if (component == "unet") {
    p->graph = std::make_unique<Graph>(buildUNetGraph(unet_, batch_, latentH_, latentW_, clip_.positions, gopt));
  } else {
    p->graph = std::make_unique<Graph>(buildVaeDecoderGraph(vae_, 1, latentH_, latentW_, gopt));
  }
  ExecOptions opt = exec_;  // the component's weight format (--weights f16,vae_decoder=f32)
  opt.format.weights = componentWeightFormat(exec_, component);
  p->exec = std::make_unique<GraphExecutor>(ctx_, *p->graph, *weights, opt);
  return p;
}

// The open window's bytes go to the component that opened it (if still resident;
// release() closes its own window before the executor goes).
void SdPipeline::closeWindow() {
  if (!window_) return;
  if (Part* p = find(windowOwner_)) p->deviceBytes = window_->addedBytes();
  window_.reset();
  windowOwner_.clear();
}

GraphExecutor& SdPipeline::executor(const std::string& component) { return *part(component).exec; }

void SdPipeline::warmUp(const std::string& component) {
  Part& p = part(component);
  if (p.warmedUp) return;
  p.exec->warmUp();
  p.warmedUp = true;
}

void SdPipeline::release(const std::string& component) {
  Part* p = find(component);
  if (!p) return;
  // The last component loaded (always so when each is released after use) owns every
  // byte allocated since its window opened: once freed, the live count is back there.
  std::optional<uint64_t> liveBefore;
  if (windowOwner_ == component && window_) liveBefore = window_->startBytes();
  if (windowOwner_ == component) closeWindow();
  kept_[component] = snapshot(*p);
  kept_[component].resident = false;
  // The executor before the graph it points to; both before the Part goes.
  p->exec.reset();
  p->graph.reset();
  parts_.erase(std::find_if(parts_.begin(), parts_.end(), [&](const auto& q) { return q.get() == p; }));
  ctx_.settle();  // so the driver lets go of the buffers its last commands used
  // The next component's footprint must not include this one's bytes still on their
  // way out; a bound, so a count that never gets there (an overestimate) cannot hang.
  if (liveBefore) ctx_.waitForLiveBytes(*liveBefore, std::chrono::seconds(2));
}

ComponentStats SdPipeline::snapshot(const Part& p) const {
  ComponentStats s;
  s.name = p.name;
  s.last = p.last;
  s.memory = p.exec->memory();
  s.nodes = static_cast<int>(p.graph->nodes().size());
  for (const auto& n : p.graph->nodes()) s.families.push_back(n.family->name());
  s.choices = p.exec->choices();
  s.deviceBytes = windowOwner_ == p.name && window_ ? window_->addedBytes() : p.deviceBytes;
  s.resident = true;
  s.loads = p.loads;
  return s;
}

ComponentStats SdPipeline::stats(const std::string& component) {
  if (!resident(component))
    if (auto k = kept_.find(component); k != kept_.end()) return k->second;
  return snapshot(part(component));
}

std::vector<float> SdPipeline::encodeText(const std::vector<int64_t>& ids) {
  const int64_t s = clip_.positions;
  if (static_cast<int64_t>(ids.size()) != batch_ * s)
    throw Error("the text encoder needs " + std::to_string(batch_) + " rows of " + std::to_string(s) + " token ids, given " +
                std::to_string(ids.size()) + " ids");
  std::vector<float> f;
  for (int64_t id : ids) {
    if (id < 0 || id >= clip_.vocab)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(clip_.vocab) + ")");
    f.push_back(static_cast<float>(id));
  }
  Part& p = part("text_encoder");
  p.exec->setInput("input_ids", f);
  p.last = p.exec->run();
  return transposeBatched(p.exec->output("last_hidden_state"), batch_, clip_.hidden, s);
}

std::vector<float> SdPipeline::predictNoise(const std::vector<float>& sample, float timestep,
                                            const std::vector<float>& context, bool profile) {
  Part& p = part("unet");
  p.exec->setInput("sample", sample);
  p.exec->setInput("timestep", std::vector<float>(static_cast<size_t>(batch_), timestep));
  const int64_t l = static_cast<int64_t>(context.size()) / (batch_ * unet_.crossAttentionDim);
  p.exec->setInput("encoder_hidden_states", transposeBatched(context, batch_, l, unet_.crossAttentionDim));
  p.last = p.exec->run(profile);
  return p.exec->output("noise_pred");
}

std::vector<float> SdPipeline::decode(const std::vector<float>& latents, bool profile) {
  Part& p = part("vae_decoder");
  std::vector<float> z(latents.size());
  // diffusers: vae.decode(latents / scaling_factor), a float32 division.
  const float sf = static_cast<float>(vae_.scalingFactor);
  for (size_t i = 0; i < z.size(); ++i) z[i] = latents[i] / sf;
  p.exec->setInput("latents", z);
  p.last = p.exec->run(profile);
  return p.exec->output("decoded");
}

}  // namespace sdspeed
