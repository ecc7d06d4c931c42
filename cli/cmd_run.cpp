// sdspeed run: the whole Stable Diffusion pipeline on one device (pipeline/run/),
// with the report users time; sdspeed shapes: the op instances of a model.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/run_report.h"
#include "kernels/registry.h"
#include "pipeline/clip_tokenizer.h"
#include "pipeline/png.h"
#include "pipeline/run/model_shapes.h"
#include "pipeline/run/sd_runner.h"
#include "pipeline/safetensors.h"
#include "pipeline/torch_rng.h"
#include "runtime/atomic_file.h"
#include "runtime/cl_error.h"

namespace sdspeed {
namespace {

namespace fs = std::filesystem;

// -W/-H/-o are the usual short names; Args knows long ones only.
std::vector<std::string> expandShort(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (const auto& a : argv) {
    if (a == "-W") out.push_back("--width");
    else if (a == "-H") out.push_back("--height");
    else if (a == "-o") out.push_back("--output");
    else out.push_back(a);
  }
  return out;
}

int64_t positive(const Args& a, const std::string& name, int fallback) {
  const int v = a.getInt(name, fallback);
  if (v < 1) throw Error("--" + name + " must be positive, got " + std::to_string(v));
  return v;
}

// FILE.safetensors:TENSOR
std::pair<std::string, std::string> fileTensor(const std::string& spec, const std::string& option) {
  const auto colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    throw Error("--" + option + " wants FILE.safetensors:TENSOR, got '" + spec + "'");
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

std::vector<int64_t> idsFromFile(const std::string& spec, const std::string& option, int64_t tokens) {
  const auto [file, tensor] = fileTensor(spec, option);
  SafetensorsFile f(file);
  auto ids = f.toInt64(tensor);
  if (static_cast<int64_t>(ids.size()) != tokens)
    throw Error(file + ": tensor " + tensor + " has " + std::to_string(ids.size()) + " ids, the text encoder takes " +
                std::to_string(tokens));
  return ids;
}

// Seeded ids for a model without a tokenizer under --random-weights:
// [bos, 8 random ids, eos, pad...], as the fixtures frame theirs.
std::vector<int64_t> randomIds(uint64_t seed, const ClipConfig& c, int64_t tokens) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> d(std::min<int64_t>(3, c.vocab - 1), c.vocab - 1);
  std::vector<int64_t> ids(static_cast<size_t>(tokens), c.pad);
  ids[0] = c.bos;
  for (int64_t i = 1; i < std::min<int64_t>(9, tokens - 1); ++i) ids[static_cast<size_t>(i)] = d(rng);
  ids[static_cast<size_t>(std::min<int64_t>(9, tokens - 1))] = c.eos;
  return ids;
}

std::map<std::string, std::string> variantOverrides(const Args& a) {
  std::map<std::string, std::string> out;
  for (const auto& kv : a.list("variant")) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
      throw Error("--variant wants FAMILY=VARIANT[,..], got '" + kv + "'");
    out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

// A one-line progress bar on a terminal, a line per step otherwise.
void progress(int done, int total, double ms) {
  if (::isatty(STDERR_FILENO)) {
    const int width = 30, fill = total ? done * width / total : width;
    std::cerr << "\r[" << std::string(static_cast<size_t>(fill), '#') << std::string(static_cast<size_t>(width - fill), '.')
              << "] step " << done << "/" << total << "  UNet " << ms << " ms" << (done == total ? "\n" : "") << std::flush;
  } else {
    std::cerr << "step " << done << "/" << total << ": UNet " << ms << " ms\n";
  }
}

}  // namespace

int cmdRun(const std::vector<std::string>& rawArgv) {
  std::set<std::string> options = {"model", "config", "prompt", "negative-prompt", "width", "height", "steps",
                                   "cfg-scale", "scheduler", "seed", "rng", "output", "precision", "layout",
                                   "report", "input-ids", "uncond-input-ids", "init-latents", "save-latents",
                                   "save-decoded", "variant", "planner", "db-dir", "weights-seed"};
  options.insert(kDeviceOptions.begin(), kDeviceOptions.end());
  std::set<std::string> flags = {"random-weights", "profile", "no-decode"};
  flags.insert(kDeviceFlags.begin(), kDeviceFlags.end());
  const Args a(expandShort(rawArgv), options, flags);
  if (!a.has("model")) throw Error("--model DIR (a diffusers folder) or --model FILE.safetensors --config DIR is required");

  // Where the architecture and the weights come from.
  ModelSource src;
  const std::string model = a.get("model");
  if (!fs::exists(model)) throw Error(model + ": no such model folder or file");
  if (fs::is_directory(model)) {
    src.configDir = a.get("config", model);
    src.weightsDir = model;
  } else {
    if (!a.has("config")) throw Error(model + " is a single-file checkpoint: --config DIR names its architecture (e.g. configs/models/sd15)");
    src.configDir = a.get("config");
    src.singleFile = model;
  }
  src.random = a.has("random-weights");
  src.seed = static_cast<uint64_t>(a.getInt("weights-seed", 0));
  for (const char* c : {"unet", "vae", "text_encoder"})
    if (!fs::exists(src.configDir + "/" + c + "/config.json"))
      throw Error(src.configDir + ": no " + c + "/config.json (a diffusers model folder has unet/, vae/, text_encoder/, scheduler/)");

  const int64_t size = defaultImageSize(src.configDir);
  const int64_t width = positive(a, "width", static_cast<int>(size)), height = positive(a, "height", static_cast<int>(size));
  checkImageSize(src.configDir, width, height);
  const int steps = static_cast<int>(positive(a, "steps", 20));
  const float cfg = std::stof(a.get("cfg-scale", "7.5"));
  const uint64_t seed = static_cast<uint64_t>(std::stoll(a.get("seed", "0")));
  if (a.get("rng", "torch") != "torch") throw Error("--rng: only 'torch' (torch.randn on the CPU) is implemented");

  const std::string schedPath = src.configDir + "/scheduler/scheduler_config.json";
  std::string schedName = a.get("scheduler");
  if (schedName.empty()) schedName = defaultSchedulerName(schedPath);
  if (schedName.empty()) schedName = "ddim";
  auto scheduler = loadScheduler(schedName, schedPath);

  ExecOptions exec;
  const std::string precision = a.get("precision", "f32");
  if (precision != "f32" && precision != "f16") throw Error("--precision wants f32 or f16, got '" + precision + "'");
  exec.format = StorageFormat::parse(precision + ".buffer." + a.get("layout", "nc4hw4"));
  exec.dbDir = a.get("db-dir", "configs/tuned");
  exec.variants = variantOverrides(a);
  for (const auto& [fam, v] : exec.variants) findFamily(fam).variant(v);  // an unknown name fails now, not later
  exec.planner = a.get("planner", "greedy-by-size");
  if (exec.planner != "none") parsePlanStrategy(exec.planner);

  const DeviceInfo dev = deviceFromArgs(a);
  Context ctx(dev, contextOptionsFromArgs(a));
  const int64_t batch = cfg > 1.0f ? 2 : 1;
  const VaeConfig vae = loadVaeConfig(src.configDir + "/vae/config.json");
  SdPipeline pipe(ctx, src, exec, height / vae.upscale(), width / vae.upscale(), batch);
  RunReport report;
  report.source = src.describe();
  report.randomWeights = src.random;

  // Token ids: given, tokenized, or (random weights without a tokenizer) seeded.
  const int64_t tokens = pipe.tokens();
  DiffusionRequest req;
  req.steps = steps;
  req.guidance = cfg;
  req.profile = a.has("profile");
  req.decode = !a.has("no-decode");
  const std::string tokDir = model + "/tokenizer";
  if (a.has("input-ids")) {
    req.condIds = idsFromFile(a.get("input-ids"), "input-ids", tokens);
    req.uncondIds = a.has("uncond-input-ids") ? idsFromFile(a.get("uncond-input-ids"), "uncond-input-ids", tokens)
                                               : std::vector<int64_t>{};
  } else if (fs::exists(tokDir + "/vocab.json")) {
    const ClipTokenizer tok = ClipTokenizer::fromFolder(tokDir);
    auto t = tok.tokenize(a.get("prompt", ""), static_cast<int>(tokens));
    if (t.truncated())
      std::cerr << "sdspeed run: note: the prompt has " << t.tokensUntruncated << " tokens; truncated to " << tokens << "\n";
    req.condIds = t.ids;
    req.uncondIds = tok.tokenize(a.get("negative-prompt", ""), static_cast<int>(tokens)).ids;
  } else if (src.random) {
    req.condIds = randomIds(seed, pipe.clipConfig(), tokens);
    req.uncondIds = randomIds(seed + 1, pipe.clipConfig(), tokens);
    report.seededTokens = true;
  } else {
    throw Error(model + ": no tokenizer/ folder (vocab.json, merges.txt): give --input-ids FILE.safetensors:TENSOR");
  }
  if (req.uncondIds.empty()) {
    if (cfg > 1.0f) throw Error("--input-ids with guidance needs --uncond-input-ids too (or --cfg-scale 1)");
  }
  if (a.has("init-latents")) {
    const auto [file, tensor] = fileTensor(a.get("init-latents"), "init-latents");
    req.initLatents = SafetensorsFile(file).toFloat(tensor);
  } else {
    req.initLatents = torchRandn(seed, {1, pipe.unetConfig().inChannels, pipe.latentH(), pipe.latentW()});
  }

  std::unique_ptr<SafetensorsWriter> latentsOut;
  if (a.has("save-latents")) latentsOut = std::make_unique<SafetensorsWriter>();
  const std::vector<int64_t> latentShape = {1, pipe.unetConfig().inChannels, pipe.latentH(), pipe.latentW()};
  req.onStep = [&](int i, const std::vector<float>& latents) {
    progress(i + 1, static_cast<int>(scheduler->timesteps().size()), pipe.stats("unet").last.deviceMs);
    if (latentsOut) latentsOut->add("latents_step" + std::to_string(i), latentShape, latents);
  };
  ctx.resetPeak();
  const DiffusionResult r = runDiffusion(pipe, *scheduler, req);
  report.result = &r;
  report.scheduler = schedName;
  report.steps = steps;
  report.width = width;
  report.height = height;
  report.batch = batch;
  report.seed = seed;
  report.device = dev;
  report.exec = exec;
  report.peakBytes = ctx.memoryStats().peakBytes;
  report.dbPath = exec.dbDir + "/" + dev.key() + ".yaml";
  report.dbExists = fs::exists(report.dbPath);
  report.collect(pipe);

  if (latentsOut) {
    latentsOut->add("final_latents", latentShape, r.finalLatents);
    latentsOut->write(a.get("save-latents"));
  }
  if (a.has("save-decoded") && req.decode) {
    SafetensorsWriter w;
    w.add("decoded", {1, pipe.vaeConfig().outChannels, height, width}, r.decoded);
    w.write(a.get("save-decoded"));
  }
  if (req.decode && !havePng() && !a.has("output")) {
    std::cerr << "sdspeed run: note: built without libpng: no image written (--save-decoded keeps the pixels)\n";
  } else if (req.decode) {
    const std::string out = a.get("output", "sdspeed.png");
    writePng(out, toRgb8(r.decoded, static_cast<int>(height), static_cast<int>(width)), static_cast<int>(height),
             static_cast<int>(width));
    report.image = out;
  }
  report.print(std::cout);
  if (a.has("report")) writeFileAtomically(a.get("report"), report.json().dump(2) + "\n");
  return 0;
}

int cmdShapes(const std::vector<std::string>& rawArgv) {
  const Args a(expandShort(rawArgv), {"model", "width", "height", "batch", "output", "name"}, {});
  if (!a.has("model")) throw Error("--model DIR (a folder with unet/, vae/, text_encoder/ config.json) is required");
  const std::string dir = a.get("model");
  const int64_t size = defaultImageSize(dir);
  const int64_t w = positive(a, "width", static_cast<int>(size)), h = positive(a, "height", static_cast<int>(size));
  const int64_t batch = positive(a, "batch", 2);
  const auto entries = modelShapes(dir, w, h, batch);
  const std::string header =
      "The op instances of the model in " + dir + " at " + std::to_string(w) + "x" + std::to_string(h) + ", batch " +
      std::to_string(batch) + " for the text encoder and UNet (classifier-free guidance) and 1 for the VAE\n"
      "decoder, each with its component and how many times it runs per call of that component (a UNet\n"
      "call is one denoising step), the most costly first. Generated from the model graph by:\n"
      "  sdspeed shapes --model " + dir + " -W " + std::to_string(w) + " -H " + std::to_string(h) +
      " --batch " + std::to_string(batch) + (a.has("output") ? " -o " + a.get("output") : "");
  const std::string text = shapeSetYaml(a.get("name", fs::path(dir).filename().string() + "-" + std::to_string(w)), entries, header);
  if (a.has("output"))
    writeFileAtomically(a.get("output"), text);
  else
    std::cout << text;
  return 0;
}

}  // namespace sdspeed
