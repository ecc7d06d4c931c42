// sdspeed quantize: int8/int4 weights quantized once, written as a diffusers-layout folder
// that `sdspeed run --model OUT --weights SAME` loads without quantizing again (a phone
// should not quantize 3.4 GB at every start). Blocks go exactly where a run quantizes at
// load (graphWeightFormats over the same graphs), so both runs are bit-identical.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/run_inputs.h"
#include "pipeline/exec/graph_executor.h"
#include "pipeline/model/model_config.h"
#include "pipeline/model/sd_graphs.h"
#include "pipeline/quantized_file.h"
#include "pipeline/run/model_shapes.h"
#include "pipeline/run/sd_pipeline.h"
#include "pipeline/safetensors.h"
#include "runtime/atomic_file.h"
#include "runtime/quant/quant.h"
#include "runtime/tensor.h"

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

// One component: every weight its graph reads, in the format the run would give it.
ComponentSummary writeComponent(const Graph& graph, const WeightSource& src, DType weights, const std::string& path,
                                const std::string& model) {
  StorageFormat f;
  f.weights = weights;
  const auto formats = graphWeightFormats(graph, f);
  SafetensorsWriter w;
  w.setMetadata(kQuantizedVersionKey, kQuantizedVersion);
  w.setMetadata("sdspeed.weights", dtypeName(weights));
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

int cmdQuantize(const std::vector<std::string>& argvIn) {
  const auto argv = expandShortOptions(argvIn);
  Args a(argv, {"model", "config", "weights", "output"}, {"help"});
  if (a.has("help")) {
    std::cout << "usage: sdspeed quantize --model DIR | --model FILE.safetensors --config DIR\n"
                 "                        --weights int8|int4[,COMPONENT=FORMAT..] -o OUT\n"
                 "Quantizes the model's Linear and convolution weights once (ggml's q8_0 / q4_0 blocks,\n"
                 "kernels/QUANTIZATION.md) and writes OUT, a diffusers-layout folder (configs, tokenizer,\n"
                 "scheduler copied; the weights sdspeed runs, blocks as U8 tensors with their format in the\n"
                 "safetensors metadata, other weights F16, or F32 for a component given f32). Run it with\n"
                 "`sdspeed run --model OUT --weights` and the same spec: bit-identical to quantizing at load.\n";
    return 0;
  }
  if (!a.has("model")) throw Error("--model DIR (a diffusers folder) or --model FILE.safetensors --config DIR is required");
  if (!a.has("weights")) throw Error("--weights int8|int4[,COMPONENT=FORMAT..] is required");
  if (!a.has("output")) throw Error("-o OUT (the folder to write) is required");
  const std::string model = a.get("model"), out = a.get("output");
  if (!fs::exists(model)) throw Error(model + ": no such model folder or file");
  ModelSource src;
  if (fs::is_directory(model)) {
    src.configDir = a.get("config", model);
    src.weightsDir = model;
  } else {
    if (!a.has("config"))
      throw Error(model + " is a single-file checkpoint: --config DIR names its architecture (e.g. configs/models/sd15)");
    src.configDir = a.get("config");
    src.singleFile = model;
  }
  for (const char* c : {"unet", "vae", "text_encoder"})
    if (!fs::exists(src.configDir + "/" + c + "/config.json"))
      throw Error(src.configDir + ": no " + c + "/config.json (a diffusers model folder has unet/, vae/, text_encoder/, scheduler/)");
  if (fs::exists(out) && (!fs::is_directory(out) || !fs::is_empty(out)))
    throw Error("-o " + out + ": exists and is not an empty folder (sdspeed quantize writes a new model folder)");
  ExecOptions exec;
  parseWeightsSpec(a.get("weights"), "--weights", exec);
  if (fs::absolute(out).lexically_normal() == fs::absolute(model).lexically_normal())
    throw Error("-o " + out + ": the same folder as --model");

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
    const DType w = componentWeightFormat(exec, p.component);
    const std::string path = out + "/" + p.dir + "/" + p.file;
    const ComponentSummary s = writeComponent(graph, *weights, w, path, model);
    std::cout << p.component << ": " << dtypeName(w) << ", " << s.quantized << " tensors quantized, " << s.kept
              << " kept " << (w == DType::F32 ? "f32" : "f16") << ", " << s.bytes << " bytes -> " << path << "\n";
  }
  // The rest of a runnable model folder: configs, scheduler, tokenizer, model_index.json.
  for (const char* c : {"unet/config.json", "vae/config.json", "text_encoder/config.json", "model_index.json"})
    copyTree(fs::path(src.configDir) / c, fs::path(out) / c);
  copyTree(fs::path(src.configDir) / "scheduler", fs::path(out) / "scheduler");
  const fs::path tok = fs::exists(fs::path(model) / "tokenizer") ? fs::path(model) / "tokenizer" : fs::path(src.configDir) / "tokenizer";
  copyTree(tok, fs::path(out) / "tokenizer");
  std::cout << "wrote " << out << " (run it with --weights " << weightsSpecText(exec) << ")\n";
  return 0;
}

}  // namespace sdspeed
