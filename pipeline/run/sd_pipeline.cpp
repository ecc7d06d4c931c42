#include "pipeline/run/sd_pipeline.h"

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

bool SdPipeline::built(const std::string& component) const {
  for (const auto& p : parts_)
    if (p->name == component) return true;
  return false;
}

SdPipeline::Part& SdPipeline::part(const std::string& component) {
  for (auto& p : parts_)
    if (p->name == component) return *p;
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
  } else if (component == "vae_decoder") {
    p->graph = std::make_unique<Graph>(buildVaeDecoderGraph(vae_, 1, latentH_, latentW_, gopt));
  } else {
    throw Error("unknown pipeline component '" + component + "' (text_encoder, unet, vae_decoder)");
  }
  ExecOptions opt = exec_;  // the component's weight format (--weights f16,vae_decoder=f32)
  opt.format.weights = componentWeightFormat(exec_, component);
  p->exec = std::make_unique<GraphExecutor>(ctx_, *p->graph, *weights, opt);
  parts_.push_back(std::move(p));
  return *parts_.back();
}

GraphExecutor& SdPipeline::executor(const std::string& component) { return *part(component).exec; }

ComponentStats SdPipeline::stats(const std::string& component) {
  Part& p = part(component);
  return {component, p.last, p.exec->memory(), static_cast<int>(p.graph->nodes().size())};
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
