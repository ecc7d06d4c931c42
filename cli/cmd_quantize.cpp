// sdspeed quantize: the flags; the work is pipeline/run/quantize_model.h.
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/run_inputs.h"
#include "pipeline/run/quantize_model.h"

namespace sdspeed {

namespace fs = std::filesystem;

int cmdQuantize(const std::vector<std::string>& argvIn) {
  const auto argv = expandShortOptions(argvIn);
  Args a(argv, {"model", "config", "weights", "output", "weights-seed"}, {"help", "random-weights"});
  if (a.has("help")) {
    std::cout << "usage: sdspeed quantize --model DIR | --model FILE.safetensors --config DIR\n"
                 "                        | --random-weights [--weights-seed N] --model DIR\n"
                 "                        --weights f16|int8|int4[,KEY=FORMAT..] -o OUT\n"
                 "Quantizes the model's Linear and convolution weights once (ggml's q8_0 / q4_0 blocks,\n"
                 "kernels/QUANTIZATION.md) and writes OUT, a diffusers-layout folder (configs, tokenizer,\n"
                 "scheduler copied; the weights sdspeed runs, blocks as U8 tensors with their format in the\n"
                 "safetensors metadata, other weights F16, or F32 for a component given f32). KEY: a component,\n"
                 "a layer kind (conv, attn, ff, proj, time_embed) or COMPONENT.KIND, as for `sdspeed run`. Run it with\n"
                 "`sdspeed run --model OUT --weights` and the same spec: bit-identical to quantizing at load.\n"
                 "--weights f16 writes every weight F16 (an f16 checkpoint, half the size of f32).\n"
                 "--random-weights: the seeded weights `sdspeed run --random-weights` uses (same --weights-seed,\n"
                 "default 0; the architecture from --model DIR's configs), e.g. SD 1.5's f16 weights as files:\n"
                 "  sdspeed quantize --random-weights --model configs/models/sd15 --weights f16 -o /tmp/sd15-f16\n";
    return 0;
  }
  if (!a.has("model")) throw Error("--model DIR (a diffusers folder) or --model FILE.safetensors --config DIR is required");
  if (!a.has("weights")) throw Error("--weights f16|int8|int4[,KEY=FORMAT..] is required");
  if (!a.has("output")) throw Error("-o OUT (the folder to write) is required");
  const std::string model = a.get("model"), out = a.get("output");
  if (!fs::exists(model)) throw Error(model + ": no such model folder or file");
  ModelSource src;
  src.random = a.has("random-weights");
  src.seed = static_cast<uint64_t>(a.getInt("weights-seed", 0));
  if (a.has("weights-seed") && !src.random) throw Error("--weights-seed is for --random-weights");
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
  {  // before any work: a path under a file or without write permission is one line now
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw Error("-o " + out + ": cannot create the folder (" + ec.message() + ")");
  }

  quantizeModel(src, exec, out, model, std::cout);
  std::cout << "wrote " << out << " (run it with --weights " << weightsSpecText(exec) << ")\n";
  return 0;
}

}  // namespace sdspeed
