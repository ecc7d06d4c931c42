#include "pipeline/run/sd_pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include "pipeline/run/memory_check.h"
#include "runtime/opencl/cl_error.h"

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

// A checkpoint tensor the component's graph does not read, beyond the known extras of
// real checkpoints (a VAE file's encoder, which sdspeed does not run; transformers'
// position_ids buffer): "" when there is none. Such a tensor means the config describes
// another model than the file (e.g. fewer text-encoder layers), which would run and give
// another image.
std::string firstUnexplained(const Graph& g, const WeightSource& w, const std::string& component, size_t& count) {
  const bool text = component == "text_encoder";
  auto canonical = [&](const std::string& n) { return text && n.rfind("text_model.", 0) != 0 ? "text_model." + n : n; };
  std::set<std::string> read;
  for (const GraphTensor& t : g.tensors())
    if (t.kind == GraphTensor::Kind::Weight) read.insert(canonical(t.name));
  std::string first;
  count = 0;
  for (const std::string& n : w.names()) {  // sorted; empty for random weights
    if (read.count(canonical(n))) continue;
    if (component == "vae_decoder" && (n.rfind("encoder.", 0) == 0 || n.rfind("quant_conv.", 0) == 0)) continue;
    if (text && n.ends_with("embeddings.position_ids")) continue;
    if (first.empty()) first = n;
    ++count;
  }
  return first;
}

}  // namespace

void requireWeightsExplained(const Graph& g, const WeightSource& w, const std::string& component, bool allowExtra) {
  size_t count = 0;
  const std::string first = firstUnexplained(g, w, component, count);
  if (first.empty() || allowExtra) return;
  throw Error("weights '" + w.describe() + "': " + std::to_string(count) + " tensor" + (count > 1 ? "s" : "") +
              " the " + component + " config does not explain, the first '" + first +
              "' (a config for another model?; --allow-extra-weights ignores them)");
}

std::string ModelSource::describe() const {
  if (random) return "seeded random weights (seed " + std::to_string(seed) + "), architecture from " + configDir;
  if (!singleFile.empty()) return "single-file checkpoint " + singleFile + ", architecture from " + configDir;
  return "diffusers folder " + weightsDir;
}

struct SdPipeline::Part {
  std::string name;
  // Before the executor (destroyed after it): streamed weights may be read from its
  // memory-mapped checkpoint at every run.
  std::unique_ptr<WeightSource> weights;
  std::unique_ptr<Graph> graph;
  std::unique_ptr<GraphExecutor> exec;
  RunTiming last;
  VaeTiling tiling;
  bool warmedUp = false;
  uint64_t deviceBytes = 0;  // its footprint window's added bytes, once closed
  int loads = 0;
};

SdPipeline::SdPipeline(Backend& ctx, ModelSource source, ExecOptions exec, int64_t latentH, int64_t latentW,
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
  // A single file's UNet and VAE tensors are read through key maps made from the configs:
  // a tensor no map explains (a block the config lacks) fails now, naming it.
  if (!src_.singleFile.empty() && !src_.random && !exec_.allowExtraWeights) {
    const auto extra = unmappedSingleFileTensors(src_.singleFile, readModelConfigJson(src_.configDir + "/unet/config.json"),
                                                 readModelConfigJson(src_.configDir + "/vae/config.json"));
    if (!extra.empty())
      throw Error("weights '" + src_.singleFile + "': " + std::to_string(extra.size()) + " tensor" +
                  (extra.size() > 1 ? "s" : "") + " the unet and vae configs in " + src_.configDir +
                  " do not explain, the first '" + extra.front() +
                  "' (a config for another model?; --allow-extra-weights ignores them)");
  }
  // The run's lower bounds against this device and the host, before any graph is built.
  MemoryCapacity cap = hostCapacity();
  cap.deviceBytes = ctx_.caps().globalMemBytes;
  cap.device = ctx_.caps().name;
  cap.deviceIsHost = ctx_.caps().isCpu();
  checkModelFits({unet_, vae_, clip_}, fitRequest(exec_, batch_, latentH_, latentW_), cap);
}

SdPipeline::~SdPipeline() = default;

std::unique_ptr<WeightSource> openModelWeights(const ModelSource& src, const std::string& component) {
  if (src.random) return randomWeights(src.seed, component);
  if (!src.singleFile.empty())
    return openSingleFileWeights(src.singleFile, component, readModelConfigJson(src.configDir + "/unet/config.json"),
                                 readModelConfigJson(src.configDir + "/vae/config.json"));
  return openFolderWeights(src.weightsDir, component);
}

std::unique_ptr<WeightSource> SdPipeline::weightsFor(const std::string& component) const {
  return openModelWeights(src_, component);
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
  window_ = std::make_unique<PeakWindow>(ctx_);
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
  }
  ExecOptions opt = exec_;  // the component's weight format (--weights f16,vae_decoder=f32)
  opt.format.weights = componentWeightFormat(exec_, component);
  p->weights = std::move(weights);
  // Before the executor: the decoder's weights are the same at any latent size.
  requireWeightsExplained(p->graph ? *p->graph : buildVaeDecoderGraph(vae_, 1, 8, 8, gopt), *p->weights, component,
                          exec_.allowExtraWeights);
  if (component == "vae_decoder") {
    buildVae(*p, *p->weights, opt);
    return p;
  }
  p->exec = std::make_unique<GraphExecutor>(ctx_, *p->graph, *p->weights, opt);
  return p;
}

// A quarter of the longer side (16 latents, 128 pixels, at 512x512: diffusers' blend
// extent, a quarter of its 64-latent tile), at least 2. On tiny-sd-a (16x16 latents) 2x2
// tiles of 9 overlapping by 2 gave 28.3 dB against the whole decode, of 12 overlapping by
// 8 gave 38.0 dB: the overlap, not the tile count, decides the seams.
int64_t tileOverlap(int64_t side) { return std::max<int64_t>(2, side / 4); }

std::vector<int64_t> tileOrigins(int64_t size, int64_t tile, int64_t overlap) {
  if (tile >= size) return {0};
  // The fewest tiles whose even spread keeps every overlap >= `overlap`:
  // (n - 1)(tile - overlap) >= size - tile.
  const int64_t n = 1 + (size - tile + (tile - overlap) - 1) / (tile - overlap);
  std::vector<int64_t> o;
  for (int64_t i = 0; i < n; ++i) o.push_back((i * (size - tile) + (n - 1) / 2) / (n - 1));
  return o;
}

std::string VaeTiling::describe() const {
  if (!tiled()) return "not tiled";
  char b[256];
  std::snprintf(b, sizeof b, "decoded in %d tiles (%zux%zu) of %lldx%lld latents, overlap >= %lld (%s); seam max abs %.3g, rms %.3g",
                tiles(), ys.size(), xs.size(), static_cast<long long>(tileH), static_cast<long long>(tileW),
                static_cast<long long>(overlap), why.c_str(), seamMaxAbs, seamRms);
  return b;
}

// The decoder's graph at the whole latent size; with a budget that cannot be met before
// streaming (the executor's first two steps), tiles of decreasing size, the largest that
// fits without streaming (the budget's third step: fewer tiles, fewer seams); if none
// does, the smallest tile with streaming. --vae-tile N asks for tiles of N.
void SdPipeline::buildVae(Part& p, const WeightSource& weights, const ExecOptions& opt) {
  const GraphOptions gopt{exec_.fuseActivations};
  auto make = [&](int64_t th, int64_t tw, bool mayStream) {
    p.exec.reset();
    p.graph = std::make_unique<Graph>(buildVaeDecoderGraph(vae_, 1, th, tw, gopt));
    ExecOptions o = opt;
    o.budgetMayStream = mayStream;
    try {
      p.exec = std::make_unique<GraphExecutor>(ctx_, *p.graph, weights, o);
    } catch (...) {
      p.graph.reset();
      throw;
    }
  };
  auto tileWith = [&](int64_t t, const std::string& why) {
    VaeTiling& tl = p.tiling;
    tl.tileH = std::min(t, latentH_);
    tl.tileW = std::min(t, latentW_);
    tl.overlap = tileOverlap(std::max(latentH_, latentW_));
    tl.ys = tileOrigins(latentH_, tl.tileH, tl.overlap);
    tl.xs = tileOrigins(latentW_, tl.tileW, tl.overlap);
    tl.why = why;
  };
  p.tiling = VaeTiling{};
  const int64_t side = std::max(latentH_, latentW_);
  if (exec_.vaeTile > 0 && exec_.vaeTile < side) {
    tileWith(exec_.vaeTile, "--vae-tile " + std::to_string(exec_.vaeTile));
    make(p.tiling.tileH, p.tiling.tileW, true);
    return;
  }
  if (!exec_.memoryBudget) {
    make(latentH_, latentW_, true);
    return;
  }
  try {
    make(latentH_, latentW_, false);
    return;
  } catch (const BudgetNeedsStreaming&) {
  }
  // 2, 3 and 4 tiles a side, each just large enough to cover the side with the overlap
  // (the least redundant work for that count: evenly spread larger tiles would overlap
  // more), at least 4 latents (32 pixels).
  std::vector<int64_t> sizes;
  const int64_t overlap = tileOverlap(side);
  for (int64_t n : {2, 3, 4}) {
    const int64_t t = (side + (n - 1) * overlap + n - 1) / n;
    if (t >= 4 && t < side && t >= overlap * 2 && (sizes.empty() || t < sizes.back())) sizes.push_back(t);
  }
  for (int64_t t : sizes) {
    tileWith(t, "memory budget");
    try {
      make(p.tiling.tileH, p.tiling.tileW, false);
      return;
    } catch (const BudgetNeedsStreaming&) {
    }
  }
  if (sizes.empty()) {
    p.tiling = VaeTiling{};
    make(latentH_, latentW_, true);
  } else {
    make(p.tiling.tileH, p.tiling.tileW, true);  // the smallest tiles stream least
  }
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

int SdPipeline::warmUp(const std::string& component, double minMs) {
  Part& p = part(component);
  if (p.warmedUp) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  int runs = 0;
  do {
    p.exec->warmUp();
    ++runs;
  } while (runs < kMaxWarmUpRuns &&
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < minMs);
  p.warmedUp = true;
  return runs;
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
  s.tiling = p.tiling;
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
  if (p.tiling.tiled()) return decodeTiled(p, z, profile);
  p.exec->setInput("latents", z);
  p.last = p.exec->run(profile);
  return p.exec->output("decoded");
}

namespace {

// A tile's weight along one axis at output pixel i of n: a linear ramp over the overlap
// with the tile before (`before` output pixels) and after (`after`), 1 elsewhere. Two
// neighbours' ramps over one overlap sum to 1.
float ramp(int64_t i, int64_t n, int64_t before, int64_t after) {
  float w = 1.0f;
  if (before > 0 && i < before) w = std::min(w, (static_cast<float>(i) + 0.5f) / static_cast<float>(before));
  if (after > 0 && i >= n - after) w = std::min(w, (static_cast<float>(n - i) - 0.5f) / static_cast<float>(after));
  return w;
}

// Output pixels tile k overlaps with tile k-1 (before) and k+1 (after).
std::pair<int64_t, int64_t> overlaps(const std::vector<int64_t>& o, size_t k, int64_t tile, int64_t scale) {
  const int64_t before = k > 0 ? (o[k - 1] + tile - o[k]) * scale : 0;
  const int64_t after = k + 1 < o.size() ? (o[k] + tile - o[k + 1]) * scale : 0;
  return {before, after};
}

}  // namespace

std::vector<float> SdPipeline::decodeTiled(Part& p, const std::vector<float>& z, bool profile) {
  VaeTiling& tl = p.tiling;
  const int64_t c = vae_.latentChannels, h = latentH_, w = latentW_, th = tl.tileH, tw = tl.tileW;
  const int64_t oc = vae_.outChannels;
  std::vector<double> acc, wsum;
  int64_t scale = 0, outH = 0, outW = 0;
  RunTiming total;
  double seamSq = 0, seamMax = 0;
  uint64_t seamN = 0;
  std::vector<float> tile(static_cast<size_t>(c * th * tw));
  for (size_t ky = 0; ky < tl.ys.size(); ++ky)
    for (size_t kx = 0; kx < tl.xs.size(); ++kx) {
      const int64_t y0 = tl.ys[ky], x0 = tl.xs[kx];
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t y = 0; y < th; ++y)
          std::copy_n(&z[static_cast<size_t>((ch * h + y0 + y) * w + x0)], tw, &tile[static_cast<size_t>((ch * th + y) * tw)]);
      p.exec->setInput("latents", tile);
      const RunTiming t = p.exec->run(profile);
      total.deviceMs += t.deviceMs;
      total.wallMs += t.wallMs;
      if (total.nodes.empty()) total.nodes = t.nodes;
      else
        for (size_t i = 0; i < t.nodes.size() && i < total.nodes.size(); ++i) total.nodes[i].us += t.nodes[i].us;
      const std::vector<float> out = p.exec->output("decoded");
      if (!scale) {
        scale = std::lround(std::sqrt(static_cast<double>(out.size()) / static_cast<double>(oc * th * tw)));
        outH = h * scale;
        outW = w * scale;
        acc.assign(static_cast<size_t>(oc * outH * outW), 0.0);
        wsum.assign(static_cast<size_t>(outH * outW), 0.0);
      }
      const int64_t ph = th * scale, pw = tw * scale;
      const auto [top, bottom] = overlaps(tl.ys, ky, th, scale);
      const auto [left, right] = overlaps(tl.xs, kx, tw, scale);
      for (int64_t y = 0; y < ph; ++y)
        for (int64_t x = 0; x < pw; ++x) {
          const double wt = static_cast<double>(ramp(y, ph, top, bottom)) * ramp(x, pw, left, right);
          const size_t at = static_cast<size_t>((y0 * scale + y) * outW + x0 * scale + x);
          for (int64_t ch = 0; ch < oc; ++ch) {
            const double v = out[static_cast<size_t>((ch * ph + y) * pw + x)];
            double& a = acc[static_cast<size_t>(ch * outH * outW) + at];
            if (wsum[at] > 0) {  // decoded before by a neighbour: how far this tile moves the blend there
              const double d = wt * std::abs(v - a / wsum[at]) / (wsum[at] + wt);
              seamMax = std::max(seamMax, d);
              seamSq += d * d;
              ++seamN;
            }
            a += wt * v;
          }
          wsum[at] += wt;
        }
    }
  std::vector<float> img(acc.size());
  for (int64_t ch = 0; ch < oc; ++ch)
    for (int64_t i = 0; i < outH * outW; ++i)
      img[static_cast<size_t>(ch * outH * outW + i)] =
          static_cast<float>(acc[static_cast<size_t>(ch * outH * outW + i)] / wsum[static_cast<size_t>(i)]);
  tl.seamMaxAbs = seamMax;
  tl.seamRms = seamN ? std::sqrt(seamSq / static_cast<double>(seamN)) : 0.0;
  p.last = total;
  return img;
}

}  // namespace sdspeed
