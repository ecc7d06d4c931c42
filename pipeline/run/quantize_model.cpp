#include "pipeline/run/quantize_model.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pipeline/exec/graph_executor.h"
#include "pipeline/exec/weight_kinds.h"
#include "pipeline/model/model_config.h"
#include "pipeline/model/sd_graphs.h"
#include "pipeline/quantized_file.h"
#include "pipeline/run/model_shapes.h"
#include "pipeline/safetensors.h"
#include "runtime/atomic_file.h"
#include "runtime/quant/quant.h"
#include "runtime/opencl/tensor.h"

namespace sdspeed {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error(p.string() + ": cannot read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Small text files beside the weights (configs, tokenizer, scheduler), each written atomically.
void copyTree(const fs::path& from, const fs::path& to) {
  if (!fs::exists(from)) return;
  if (fs::is_regular_file(from)) {
    fs::create_directories(to.parent_path());
    writeFileAtomically(to.string(), readFile(from));
    return;
  }
  for (const auto& e : fs::directory_iterator(from))
    if (e.is_regular_file() && e.path().extension() != ".safetensors" && e.path().extension() != ".bin")
      copyTree(e.path(), to / e.path().filename());
}

struct ComponentSummary {
  int quantized = 0, kept = 0;
  uint64_t bytes = 0;
};

// The component's part of the spec: its format, then the layer kinds that differ in it
// (int4,conv=int8: "int4,conv=int8" for each component).
std::string componentSpec(const ExecOptions& exec, const std::string& component) {
  const DType w = componentWeightFormat(exec, component);
  std::string s = dtypeName(w);
  for (const auto& k : weightKinds())
    if (weightFormatFor(exec, component, k) != w) s += "," + k + "=" + dtypeName(weightFormatFor(exec, component, k));
  return s;
}

// One component: every weight its graph reads, in the format the run would give it (per
// layer kind: the executor's graphNodeFormats).
ComponentSummary writeComponent(const Graph& graph, const WeightSource& src, const ExecOptions& exec,
                                const std::string& path, const std::string& model) {
  StorageFormat f;
  f.weights = componentWeightFormat(exec, graph.component());
  const auto formats = graphWeightFormats(graph, graphNodeFormats(graph, f, exec));
  SafetensorsWriter w;
  w.setMetadata(kQuantizedVersionKey, kQuantizedVersion);
  w.setMetadata("sdspeed.weights", componentSpec(exec, graph.component()));
  w.setMetadata("sdspeed.source", model);
  ComponentSummary sum;
  const auto& ts = graph.tensors();
  for (size_t id = 0; id < ts.size(); ++id) {
    const GraphTensor& t = ts[id];
    if (t.kind != GraphTensor::Kind::Weight) continue;
    const std::vector<float> values = src.load(t.name, t.diskShape);
    checkFiniteWeight(values, graph.component(), t.name);
    const TensorDesc d{t.shape, formats[id]};
    if (isQuantized(d.format.dtype)) {
      const std::vector<uint8_t> blocks = packTensor(d, values);  // the device's bytes
      const int64_t rows = t.shape.n;
      w.add(t.name, {rows, static_cast<int64_t>(blocks.size()) / rows}, blocks);
      w.setMetadata(kQuantizedTensorPrefix + t.name,
                    quantizedTensorMeta(d.format.dtype == DType::Q8_0 ? quant::Format::Q8_0 : quant::Format::Q4_0,
                                        t.diskShape));
      ++sum.quantized;
      sum.bytes += blocks.size();
    } else if (d.format.dtype == DType::F16) {
      // Rounded as the run's upload rounds them: the run reads F16 back exactly.
      checkFitsF16(values, graph.component(), t.name);
      std::vector<uint16_t> bits(values.size());
      for (size_t i = 0; i < values.size(); ++i) bits[i] = quant::f32ToF16(values[i]);
      w.add(t.name, t.diskShape, StDType::F16, bits);
      ++sum.kept;
      sum.bytes += 2 * values.size();
    } else {
      w.add(t.name, t.diskShape, values);
      ++sum.kept;
      sum.bytes += 4 * values.size();
    }
  }
  fs::create_directories(fs::path(path).parent_path());
  w.write(path);
  return sum;
}

}  // namespace

void quantizeModel(const ModelSource& src, const ExecOptions& exec, const std::string& out, const std::string& model,
                   std::ostream& log) {
  const UNetConfig unet = loadUNetConfig(src.configDir + "/unet/config.json");
  const VaeConfig vae = loadVaeConfig(src.configDir + "/vae/config.json");
  const ClipConfig clip = loadClipConfig(src.configDir + "/text_encoder/config.json");
  // Which weights a graph reads does not depend on its sizes: the default image's.
  const int64_t latent = defaultImageSize(src.configDir) / vae.upscale();
  const GraphOptions gopt{exec.fuseActivations};
  struct Part {
    std::string component, dir, file;
  };
  const Part parts[] = {{"text_encoder", "text_encoder", "model.safetensors"},
                        {"unet", "unet", "diffusion_pytorch_model.safetensors"},
                        {"vae_decoder", "vae", "diffusion_pytorch_model.safetensors"}};
  for (const Part& p : parts) {
    auto weights = openModelWeights(src, p.dir);
    Graph graph = p.component == "text_encoder"
                      ? buildTextEncoderGraph(clip, 1, clip.positions,
                                              weights->has("text_model.embeddings.token_embedding.weight") ? "text_model." : "",
                                              gopt)
                  : p.component == "unet" ? buildUNetGraph(unet, 1, latent, latent, clip.positions, gopt)
                                          : buildVaeDecoderGraph(vae, 1, latent, latent, gopt);
    const std::string path = out + "/" + p.dir + "/" + p.file;
    // The metadata names where the values came from (for random weights: the seed).
    const ComponentSummary s = writeComponent(graph, *weights, exec, path, src.random ? src.describe() : model);
    log << p.component << ": " << componentSpec(exec, p.component) << ", " << s.quantized << " tensors quantized, "
        << s.kept << " kept (f16, or f32 where the format is f32), " << s.bytes << " bytes -> " << path << "\n";
  }
  // The rest of a runnable model folder: configs, scheduler, tokenizer, model_index.json.
  for (const char* c : {"unet/config.json", "vae/config.json", "text_encoder/config.json", "model_index.json"})
    copyTree(fs::path(src.configDir) / c, fs::path(out) / c);
  copyTree(fs::path(src.configDir) / "scheduler", fs::path(out) / "scheduler");
  const fs::path tok = fs::exists(fs::path(model) / "tokenizer") ? fs::path(model) / "tokenizer" : fs::path(src.configDir) / "tokenizer";
  copyTree(tok, fs::path(out) / "tokenizer");
}

}  // namespace sdspeed
