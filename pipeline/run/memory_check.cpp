#include "pipeline/run/memory_check.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "pipeline/exec/weight_kinds.h"
#include "pipeline/model/model_size.h"
#include "runtime/error.h"

namespace sdspeed {
namespace {

using real = long double;

// Host bytes per graph op, a lower bound: the node with its problem, label and output
// tensor record (measured near 1 KiB on SD 1.5's UNet graph); the executor's prepared op
// and kernel objects come on top.
constexpr real kHostBytesPerOp = 512;

struct Need {
  std::string component;
  ComponentSize size;
  real device = 0, host = 0;
  real weights = 0, activation = 0;  // the device need's two parts (bytes)
};

struct Needs {
  std::vector<Need> parts;
  real device = 0, host = 0;  // the run's: the largest component's, or the sum when resident
};

Needs needs(const ModelConfigs& c, const FitRequest& r) {
  auto wbytes = [&](const std::string& comp) {
    auto it = r.weightBytes.find(comp);
    return static_cast<real>(it == r.weightBytes.end() ? 4 : it->second);
  };
  const real ab = static_cast<real>(r.activationBytes);
  Needs n;
  n.parts = {{"text_encoder", textEncoderSize(c.clip, r.batch, c.clip.positions, r.fuse)},
             {"unet", unetSize(c.unet, r.batch, r.latentH, r.latentW, c.clip.positions, r.fuse)},
             {"vae_decoder", vaeDecoderSize(c.vae, 1, r.latentH, r.latentW, r.fuse)}};
  for (Need& p : n.parts) {
    const real w = wbytes(p.component);
    // Streamed weights pass through the device one (or a few) at a time.
    p.weights = (r.weightsMayStream ? p.size.largestWeight : p.size.weightElements) * w;
    if (!(p.component == "vae_decoder" && r.vaeMayTile)) p.activation = p.size.largestActivation * ab;
    p.device = p.weights + p.activation;
    // The graph's bookkeeping, one float copy of a weight as it is loaded, and the
    // vectors the runner keeps on the host (the CFG batch of latents, the image).
    p.host = p.size.nodes * kHostBytesPerOp;
    if (r.graphsOnly) {
      p.device = p.weights = p.activation = 0;
      n.host = std::max(n.host, p.host);
      continue;
    }
    p.host += p.size.largestWeight * 4;
    const real lh = static_cast<real>(r.latentH), lw = static_cast<real>(r.latentW);
    if (p.component == "unet") p.host += static_cast<real>(r.batch * c.unet.inChannels) * lh * lw * 4;
    if (p.component == "vae_decoder") {
      const real up = static_cast<real>(c.vae.upscale());
      p.host += static_cast<real>(c.vae.outChannels) * lh * up * lw * up * 4;
    }
    n.device = r.keepResident ? n.device + p.device : std::max(n.device, p.device);
    n.host = r.keepResident ? n.host + p.host : std::max(n.host, p.host);
  }
  return n;
}

// How far over the capacity the run is (<= 1: it fits), device or host.
real overshoot(const Needs& n, const MemoryCapacity& cap) {
  real o = 0;
  if (cap.deviceBytes) o = std::max(o, n.device / static_cast<real>(cap.deviceBytes));
  if (cap.host.bytes) o = std::max(o, (n.host + (cap.deviceIsHost ? n.device : 0)) / static_cast<real>(cap.host.bytes));
  return o;
}

std::string listText(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// A value whose reduction would shrink the run: what it is called in the error line,
// and how to reduce it (to the smallest valid value: the size it is to blame for).
struct Suspect {
  std::string name;
  std::function<void(ModelConfigs&, FitRequest&)> reduce;
};

std::vector<Suspect> suspects(const ModelConfigs& c, const FitRequest& r) {
  const std::string u = c.unet.path + ": ", v = c.vae.path + ": ", t = c.clip.path + ": ";
  auto groupsList = [](const std::vector<int64_t>& l, int64_t g) { return std::vector<int64_t>(l.size(), g); };
  std::vector<Suspect> s = {
      {u + "layers_per_block: " + std::to_string(c.unet.layersPerBlock), [](auto& m, auto&) { m.unet.layersPerBlock = 1; }},
      {u + "transformer_layers_per_block: " + std::to_string(c.unet.transformerLayers),
       [](auto& m, auto&) { m.unet.transformerLayers = 1; }},
      {u + "block_out_channels: " + listText(c.unet.blockOut),
       [&](auto& m, auto&) { m.unet.blockOut = groupsList(m.unet.blockOut, m.unet.groups); }},
      {u + "cross_attention_dim: " + std::to_string(c.unet.crossAttentionDim), [](auto& m, auto&) { m.unet.crossAttentionDim = 1; }},
      {u + "in_channels: " + std::to_string(c.unet.inChannels), [](auto& m, auto&) { m.unet.inChannels = 1; }},
      {u + "out_channels: " + std::to_string(c.unet.outChannels), [](auto& m, auto&) { m.unet.outChannels = 1; }},
      {v + "layers_per_block: " + std::to_string(c.vae.layersPerBlock), [](auto& m, auto&) { m.vae.layersPerBlock = 1; }},
      {v + "block_out_channels: " + listText(c.vae.blockOut),
       [&](auto& m, auto&) { m.vae.blockOut = groupsList(m.vae.blockOut, m.vae.groups); }},
      {v + "latent_channels: " + std::to_string(c.vae.latentChannels), [](auto& m, auto&) { m.vae.latentChannels = 1; }},
      {v + "out_channels: " + std::to_string(c.vae.outChannels), [](auto& m, auto&) { m.vae.outChannels = 1; }},
      {t + "num_hidden_layers: " + std::to_string(c.clip.layers), [](auto& m, auto&) { m.clip.layers = 1; }},
      {t + "hidden_size: " + std::to_string(c.clip.hidden), [](auto& m, auto&) { m.clip.hidden = m.clip.heads; }},
      {t + "intermediate_size: " + std::to_string(c.clip.intermediate), [](auto& m, auto&) { m.clip.intermediate = 1; }},
      {t + "vocab_size: " + std::to_string(c.clip.vocab), [](auto& m, auto&) { m.clip.vocab = 1; }},
      {t + "max_position_embeddings: " + std::to_string(c.clip.positions), [](auto& m, auto&) { m.clip.positions = 1; }},
      {"-W " + std::to_string(r.latentW * c.vae.upscale()) + " -H " + std::to_string(r.latentH * c.vae.upscale()),
       [](auto&, auto& q) { q.latentH = q.latentW = 8; }},
  };
  return s;
}

}  // namespace

FitRequest fitRequest(const ExecOptions& exec, int64_t batch, int64_t latentH, int64_t latentW) {
  FitRequest r;
  r.batch = batch;
  r.latentH = latentH;
  r.latentW = latentW;
  r.fuse = exec.fuseActivations;
  r.activationBytes = exec.format.dtype == DType::F16 ? 2 : 4;
  // Per element, the component's widest weight format among its own and its layer
  // kinds' (--weights f16,conv=f32: 4), so the estimate stays an upper bound. int8/int4
  // count as 2: their blocks take 1.06 / 0.56 bytes, and the weights no kernel reads
  // quantized (biases, norms, embeddings) stay f16 (kernels/QUANTIZATION.md).
  for (const std::string& c : pipelineComponents()) {
    bool narrow = true;
    auto atMost16 = [](DType d) { return d == DType::F16 || d == DType::Q8_0 || d == DType::Q4_0; };
    narrow = atMost16(componentWeightFormat(exec, c));
    for (const auto& k : weightKinds()) narrow = narrow && atMost16(weightFormatFor(exec, c, k));
    r.weightBytes[c] = narrow ? 2 : 4;
  }
  r.weightsMayStream = exec.memoryBudget > 0;
  r.vaeMayTile = exec.memoryBudget > 0 || exec.vaeTile > 0;
  return r;
}

MemoryCapacity hostCapacity() {
  MemoryCapacity c;
  c.host = availableHostMemory();
  return c;
}

void checkModelFits(const ModelConfigs& cfg, const FitRequest& req, const MemoryCapacity& cap) {
  const Needs base = needs(cfg, req);
  const real over = overshoot(base, cap);
  if (over <= 1) return;
  // The value to blame: the one whose reduction leaves the least overshoot.
  std::string culprit;
  real best = over;
  for (const Suspect& s : suspects(cfg, req)) {
    ModelConfigs c = cfg;
    FitRequest r = req;
    s.reduce(c, r);
    const real o = overshoot(needs(c, r), cap);
    if (o < best) {
      best = o;
      culprit = s.name;
    }
  }
  if (culprit.empty()) culprit = "the model in " + cfg.unet.path.substr(0, cfg.unet.path.rfind('/')) + "/..";
  const bool device = cap.deviceBytes && base.device > static_cast<real>(cap.deviceBytes);
  // The component that needs the most of the resource that ran out.
  const Need* worst = &base.parts[0];
  for (const Need& p : base.parts)
    if ((device ? p.device : p.host) > (device ? worst->device : worst->host)) worst = &p;
  const std::string what = req.keepResident ? "the three components (kept resident)" : "the " + worst->component;
  if (device)
    throw Error(culprit + " makes " + what + " need at least " + bytesText(base.device) + " of device memory (" +
                worst->component + ": weights " + bytesText(worst->weights) + ", largest activation " +
                bytesText(worst->activation) + "), more than " + cap.device + " has (" +
                bytesText(static_cast<real>(cap.deviceBytes)) + " global memory)");
  char ops[32];
  std::snprintf(ops, sizeof ops, "%.3Lg", worst->size.nodes);
  const real host = base.host + (cap.deviceIsHost ? base.device : 0);
  throw Error(culprit + " makes " + what + " need at least " + bytesText(host) + " of host memory (" +
              worst->component + ": " + ops + " ops in its graph" +
              (cap.deviceIsHost ? "; the device's buffers are host memory too" : "") + "), more than the " +
              bytesText(static_cast<real>(cap.host.bytes)) + " available (" + cap.host.what + ")");
}

}  // namespace sdspeed
