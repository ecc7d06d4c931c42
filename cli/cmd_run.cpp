// sdspeed run: the whole Stable Diffusion pipeline on one device (pipeline/run/),
// with the report users time; sdspeed shapes: the op instances of a model.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "runtime/device_key.h"
#include "cli/commands.h"
#include "cli/run_inputs.h"
#include "cli/run_report.h"
#include "kernels/registry.h"
#include "pipeline/clip_tokenizer.h"
#include "pipeline/png.h"
#include "pipeline/run/model_shapes.h"
#include "pipeline/run/sd_runner.h"
#include "pipeline/safetensors.h"
#include "pipeline/torch_rng.h"
#include "runtime/atomic_file.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace fs = std::filesystem;

int cmdRun(const std::vector<std::string>& rawArgv) {
  if (!rawArgv.empty() && (rawArgv[0] == "--help" || rawArgv[0] == "-h")) {
    std::cout
        << "usage: sdspeed run --model DIR | --model FILE.safetensors --config DIR | --random-weights --model DIR\n"
           "       [--prompt TEXT] [--negative-prompt TEXT] [-W 512 -H 512] [--steps 20] [--cfg-scale 7.5]\n"
           "       [--scheduler ddim|pndm|euler|dpmpp2m] [--seed N] [--rng torch] [-o out.png]\n"
           "       [--precision f32|f16] [--weights f32|f16|int8|int4[,KEY=FORMAT..]] [--layout nc4hw4|nchw] [--planner none|naive|equality|greedy-in-order|greedy-by-size]\n"
           "       [--variant FAMILY=VARIANT,..] [--db-dir configs/tuned] [--report report.json] [--profile]\n"
           "       [--input-ids F:T] [--uncond-input-ids F:T] [--init-latents F:T] [--save-latents F] [--save-decoded F]\n"
           "       [--no-decode] [--no-warmup] [--warmup-ms MS] [--keep-resident] [--weights-seed N] [--device P:D|NAME]\n"
           "       [--memory-budget SIZE] [--derived-weights resident|per-call] [--scratch planned|own]\n"
           "       [--arena-binding offsets|sub-buffers] [--stream-staging ring|pageable] [--vae-tile N] [--check-finite]\n"
           "       [--allow-extra-weights] [--context-ops once|every-step]\n"
           "Runs text encoder, the denoising loop and the VAE decoder on the device and reports time and memory.\n"
           "Each component is loaded and warmed up just before it first runs and freed once its output exists\n"
           "(--keep-resident: all loaded up front and kept to the end, the device holding all three at once).\n"
           "The warm-up runs each component on zero inputs until --warmup-ms of wall time passed (default 500\n"
           "on GPUs, one run on CPU devices; at most 50 runs; 0: one run), so the timed steps start at the clocks\n"
           "the GPU runs at under load.\n"
           "--weights: the weights' storage (f16 halves weight memory; arithmetic stays f32). KEY is a component\n"
           "(text_encoder, unet, vae_decoder), a layer kind (conv, attn, ff, proj, time_embed) or COMPONENT.KIND,\n"
           "e.g. --weights f16,vae_decoder=f32 or --weights int4,conv=int8,unet.attn=f16; the most specific wins\n"
           "(COMPONENT.KIND > KIND > COMPONENT > the default). int8/int4: ggml's q8_0/q4_0 blocks, quantized at\n"
           "load, for the GEMM and convolution matrices; other weights stay f16 (the report's `weights` lines say\n"
           "which and why; kernels/QUANTIZATION.md).\n"
           "Weights, --init-latents, the latents after every step and the image must be finite (an error names the\n"
           "tensor or step). --check-finite (slow) runs op by op and names the first op whose output holds a NaN or inf.\n"
           "A checkpoint tensor the configs do not explain (more layers than the config) is an error naming it;\n"
           "--allow-extra-weights ignores such tensors. The model's memory is estimated from its configs before\n"
           "anything is allocated: a size the device or host cannot hold is an error naming the key or -W/-H.\n"
           "--context-ops once (default): the UNet ops that read only the text context (the cross-attentions' K and\n"
           "V projections) run at the first step and stay on the device for the later ones while the context is the\n"
           "same; every-step runs them at every step (diffusers' behaviour; the UNet time then includes them).\n";
    return 0;
  }
  auto options = runSetupOptions();
  options.insert({"output", "report", "save-latents", "save-decoded", "warmup-ms"});
  options.insert(kDeviceOptions.begin(), kDeviceOptions.end());
  auto flags = runSetupFlags();
  flags.insert({"profile", "no-decode", "no-warmup", "keep-resident"});
  flags.insert(kDeviceFlags.begin(), kDeviceFlags.end());
  const Args a(expandShortOptions(rawArgv), options, flags);
  // Flags first: a bad one fails before a model is opened.
  const int warmUpMs = a.getInt("warmup-ms", 0);
  if (warmUpMs < 0) throw Error("--warmup-ms must not be negative (0: one warm-up run per component)");
  if (a.has("warmup-ms") && a.has("no-warmup")) throw Error("--warmup-ms and --no-warmup contradict each other: give one");
  std::unique_ptr<Backend> backend = backendFromArgs(a);
  Backend& ctx = *backend;
  const RunSetup s = runSetup(a, &ctx.caps());
  // Output paths fail before the run, not after minutes of it.
  for (const char* opt : {"output", "report", "save-latents", "save-decoded"})
    if (a.has(opt)) checkWritable(a.get(opt), std::string(opt == std::string("output") ? "-o" : "--") + (opt == std::string("output") ? "" : opt));
  auto scheduler = loadScheduler(s.schedulerName, s.schedulerPath);
  noteDatabase("run", s.exec, ctx);
  SdPipeline pipe(ctx, s.src, s.exec, s.latentH, s.latentW, s.batch);
  RunReport report;
  report.source = s.src.describe();
  report.randomWeights = s.src.random;
  report.seededTokens = s.seededTokens;
  DiffusionRequest req;
  req.steps = s.steps;
  req.guidance = s.cfg;
  req.profile = a.has("profile");
  req.decode = !a.has("no-decode");
  // Load, warm-up and release happen inside runDiffusion, timed as setup apart from the
  // totals (--no-warmup: the first calls pay the one-time costs).
  req.warmUp = !a.has("no-warmup");
  req.warmUpMinMs = a.has("warmup-ms") ? warmUpMs : defaultWarmUpMs(ctx.caps());
  req.keepResident = a.has("keep-resident");
  if (req.keepResident && a.has("memory-budget"))
    throw Error("--memory-budget holds one component at a time to the budget: it needs released components "
                "(drop --keep-resident)");
  req.condIds = s.condIds;
  req.uncondIds = s.uncondIds;
  req.initLatents = s.initLatents;
  const int64_t width = s.width, height = s.height, batch = s.batch;
  const std::string& schedName = s.schedulerName;
  const uint64_t seed = s.seed;
  const ExecOptions& exec = s.exec;

  std::unique_ptr<SafetensorsWriter> latentsOut;
  if (a.has("save-latents")) latentsOut = std::make_unique<SafetensorsWriter>();
  const std::vector<int64_t> latentShape = {1, pipe.unetConfig().inChannels, pipe.latentH(), pipe.latentW()};
  req.onStep = [&](int i, const std::vector<float>& latents) {
    printProgress(i + 1, static_cast<int>(scheduler->timesteps().size()), pipe.stats("unet").last.deviceMs);
    if (latentsOut) latentsOut->add("latents_step" + std::to_string(i), latentShape, latents);
  };
  const DiffusionResult r = runDiffusion(pipe, *scheduler, req);
  report.result = &r;
  report.scheduler = schedName;
  report.steps = s.steps;
  report.width = width;
  report.height = height;
  report.batch = batch;
  report.seed = seed;
  report.device = ctx.caps();
  report.deviceKey = ctx.deviceKey();
  report.apiVersion = ctx.apiVersion();
  report.exec = exec;
  report.peakBytes = ctx.memoryStats().peakBytes;
  report.dbPath = resolveKeyedPath(exec.dbDir, ctx.deviceKey(), ".yaml");
  report.dbExists = fs::exists(report.dbPath);
  report.collect(pipe);
  if (const std::string note = fallbackNote(pipe); !note.empty()) std::cerr << "sdspeed run: note: " << note << "\n";

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
  if (!rawArgv.empty() && (rawArgv[0] == "--help" || rawArgv[0] == "-h")) {
    std::cout << "usage: sdspeed shapes --model DIR [-W W -H H] [--batch 2] [-o FILE.yaml] [--name NAME]\n"
                 "Lists every op instance of the model's graphs (a shape set for sdspeed tune --shapes).\n";
    return 0;
  }
  const Args a(expandShortOptions(rawArgv), {"model", "width", "height", "batch", "output", "name"}, {});
  if (!a.has("model")) throw Error("--model DIR (a folder with unet/, vae/, text_encoder/ config.json) is required");
  const std::string dir = a.get("model");
  const int64_t size = defaultImageSize(dir);
  const int64_t w = a.getInt("width", static_cast<int>(size)), h = a.getInt("height", static_cast<int>(size));
  const int64_t batch = a.getInt("batch", 2);
  if (batch < 1) throw Error("--batch must be positive");
  const auto entries = modelShapes(dir, w, h, batch);
  const std::string header =
      "The op instances of the model in " + dir + " at " + std::to_string(w) + "x" + std::to_string(h) + ", batch " +
      std::to_string(batch) + " for the text encoder and UNet (classifier-free guidance) and 1 for the VAE\n"
      "decoder, each with its component and how many times it runs per call of that component (a UNet\n"
      "call is one denoising step), the most costly first; `steady`: how many of those runs read only the\n"
      "text context (K and V of the cross-attentions), once per image at `run`'s default --context-ops once.\n"
      "Generated from the model graph by:\n"
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
