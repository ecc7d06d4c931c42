#include "cli/run_inputs.h"

#include <algorithm>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include "kernels/lowering.h"
#include "kernels/registry.h"
#include "pipeline/clip_tokenizer.h"
#include "pipeline/finite.h"
#include "pipeline/run/memory_check.h"
#include "pipeline/run/model_shapes.h"
#include "pipeline/run/sd_runner.h"
#include "pipeline/safetensors.h"
#include "pipeline/torch_rng.h"
#include "runtime/device_key.h"
#include "runtime/opencl/cl_error.h"
#include "tuning/database.h"

namespace sdspeed {
namespace {

namespace fs = std::filesystem;

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
  auto ids = SafetensorsFile(file).toInt64(tensor);
  if (static_cast<int64_t>(ids.size()) != tokens)
    throw Error(file + ": tensor " + tensor + " has " + std::to_string(ids.size()) + " ids, the text encoder takes " +
                std::to_string(tokens));
  return ids;
}

// Seeded ids for a model without a tokenizer under --random-weights:
// [bos, 8 random ids, eos, pad...], framed as the fixtures frame theirs.
std::vector<int64_t> randomIds(uint64_t seed, const ClipConfig& c) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> d(std::min<int64_t>(3, c.vocab - 1), c.vocab - 1);
  const int64_t n = c.positions, eos = std::min<int64_t>(9, n - 1);
  std::vector<int64_t> ids(static_cast<size_t>(n), c.pad);
  ids[0] = c.bos;
  for (int64_t i = 1; i < eos; ++i) ids[static_cast<size_t>(i)] = d(rng);
  ids[static_cast<size_t>(eos)] = c.eos;
  return ids;
}

std::map<std::string, std::vector<std::string>> variantOverrides(const Args& a) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& kv : a.list("variant")) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
      throw Error("--variant wants FAMILY=VARIANT[,..], got '" + kv + "'");
    out[kv.substr(0, eq)] = {kv.substr(eq + 1)};
  }
  for (const auto& [fam, list] : out)
    for (const auto& v : list) findFamily(fam).variant(v);  // an unknown name fails now, not later
  return out;
}

}  // namespace

std::vector<std::string> expandShortOptions(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (const auto& a : argv) {
    if (a == "-W") out.push_back("--width");
    else if (a == "-H") out.push_back("--height");
    else if (a == "-o") out.push_back("--output");
    else out.push_back(a);
  }
  return out;
}

void applyMemoryOptions(const Args& a, ExecOptions& exec) {
  if (a.has("memory-budget")) exec.memoryBudget = parseMemorySize("--memory-budget", a.get("memory-budget"));
  const std::string derived = a.get("derived-weights", "resident");
  if (derived != "resident" && derived != "per-call")
    throw Error("--derived-weights wants resident or per-call, got '" + derived + "'");
  exec.derivedWeightsPerCall = derived == "per-call";
  const std::string scratch = a.get("scratch", "planned");
  if (scratch != "planned" && scratch != "own") throw Error("--scratch wants planned or own, got '" + scratch + "'");
  exec.planScratch = scratch == "planned";
  const std::string binding = a.get("arena-binding", "offsets");
  if (binding != "offsets" && binding != "sub-buffers")
    throw Error("--arena-binding wants offsets or sub-buffers, got '" + binding + "'");
  exec.arenaSubBuffers = binding == "sub-buffers";
  const std::string staging = a.get("stream-staging", "ring");
  if (staging != "ring" && staging != "pageable")
    throw Error("--stream-staging wants ring or pageable, got '" + staging + "'");
  exec.pinnedStaging = staging == "ring";
  if (a.has("vae-tile")) {
    exec.vaeTile = a.getInt("vae-tile", 0);
    if (exec.vaeTile < 4) throw Error("--vae-tile wants a tile of at least 4 latent pixels, got '" + a.get("vae-tile") + "'");
  }
}

DType runArithmetic(const std::string& text, const std::string& what) {
  const DType a = parseDType(text, what);
  // Families with a variant computing in `a` run it; the others compute in f32 on the
  // same storage (graphNodeFormats). A type no family computes in would change nothing:
  // refused, rather than a run labelled with an arithmetic it never used.
  for (const auto& fam : allFamilies())
    if (familyComputesIn(*fam, a)) return a;
  throw Error(what + " " + text + ": no kernel computes in " + text + " (check, bench and tune take --arithmetic per op)");
}

std::set<std::string> runSetupOptions() {
  return {"model", "config", "prompt", "negative-prompt", "width", "height", "steps", "cfg-scale", "scheduler", "seed",
          "rng", "precision", "layout", "input-ids", "uncond-input-ids", "init-latents", "variant", "planner",
          "db-dir", "weights-seed", "memory-budget", "derived-weights", "scratch", "arena-binding", "weights",
          "stream-staging", "vae-tile", "arithmetic", "context-ops"};
}

std::set<std::string> runSetupFlags() { return {"random-weights", "check-finite", "allow-extra-weights"}; }

RunSetup runSetup(const Args& a, const DeviceCaps* device) {
  RunSetup s;
  if (!a.has("model")) throw Error("--model DIR (a diffusers folder) or --model FILE.safetensors --config DIR is required");
  s.model = a.get("model");
  if (!fs::exists(s.model)) throw Error(s.model + ": no such model folder or file");
  if (fs::is_directory(s.model)) {
    s.src.configDir = a.get("config", s.model);
    s.src.weightsDir = s.model;
  } else {
    if (!a.has("config"))
      throw Error(s.model + " is a single-file checkpoint: --config DIR names its architecture (e.g. configs/models/sd15)");
    s.src.configDir = a.get("config");
    s.src.singleFile = s.model;
  }
  s.src.random = a.has("random-weights");
  s.src.seed = static_cast<uint64_t>(a.getInt("weights-seed", 0));
  for (const char* c : {"unet", "vae", "text_encoder"})
    if (!fs::exists(s.src.configDir + "/" + c + "/config.json"))
      throw Error(s.src.configDir + ": no " + c + "/config.json (a diffusers model folder has unet/, vae/, text_encoder/, scheduler/)");

  const int64_t size = defaultImageSize(s.src.configDir);
  s.width = positive(a, "width", static_cast<int>(size));
  s.height = positive(a, "height", static_cast<int>(size));
  checkImageSize(s.src.configDir, s.width, s.height);
  const VaeConfig vae = loadVaeConfig(s.src.configDir + "/vae/config.json");
  const UNetConfig unet = loadUNetConfig(s.src.configDir + "/unet/config.json");
  const ClipConfig clip = loadClipConfig(s.src.configDir + "/text_encoder/config.json");
  s.latentH = s.height / vae.upscale();
  s.latentW = s.width / vae.upscale();
  s.steps = static_cast<int>(positive(a, "steps", 20));
  {
    const std::string v = a.get("cfg-scale", "7.5");
    size_t used = 0;
    try {
      s.cfg = std::stof(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v.size() || !std::isfinite(s.cfg)) throw Error("--cfg-scale wants a number, got '" + v + "'");
  }
  s.batch = s.cfg > 1.0f ? 2 : 1;
  {
    const std::string v = a.get("seed", "0");
    size_t used = 0;
    try {
      if (!v.empty() && v[0] != '-') s.seed = std::stoull(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v.size()) throw Error("--seed wants a whole number 0..2^64-1, got '" + v + "'");
  }
  if (a.get("rng", "torch") != "torch") throw Error("--rng: only 'torch' (torch.randn on the CPU) is implemented");

  s.schedulerPath = s.src.configDir + "/scheduler/scheduler_config.json";
  s.schedulerName = a.get("scheduler");
  if (s.schedulerName.empty()) s.schedulerName = defaultSchedulerName(s.schedulerPath);
  if (s.schedulerName.empty()) s.schedulerName = "ddim";
  loadScheduler(s.schedulerName, s.schedulerPath);  // validates name and config now

  const std::string precision = a.get("precision", "f32");
  if (precision != "f32" && precision != "f16") throw Error("--precision wants f32 or f16, got '" + precision + "'");
  s.exec.format = StorageFormat::parse(precision + ".buffer." + a.get("layout", "nc4hw4"));
  s.exec.format.arithmetic = runArithmetic(a.get("arithmetic", "f32"), "--arithmetic");
  // --weights FORMAT[,KEY=FORMAT..]: the weights' precision, per component and layer kind.
  if (a.has("weights")) parseWeightsSpec(a.get("weights"), "--weights", s.exec);
  s.exec.dbDir = a.get("db-dir", "configs/tuned");
  s.exec.variants = variantOverrides(a);
  s.exec.planner = a.get("planner", "greedy-by-size");
  if (s.exec.planner != "none") parsePlanStrategy(s.exec.planner);
  applyMemoryOptions(a, s.exec);
  // --check-finite: op by op with a finish after each, every output scanned (slow: a
  // diagnostic for a NaN image, naming the op that first wrote a NaN or inf).
  s.exec.checkFinite = a.has("check-finite");
  // --context-ops: the ops of the text context alone (cross-attention K and V) once per
  // image (reused by later steps while the context is unchanged) or every step.
  const std::string contextOps = a.get("context-ops", "once");
  if (contextOps != "once" && contextOps != "every-step")
    throw Error("--context-ops wants once or every-step, got '" + contextOps + "'");
  s.exec.reuseSteadyOps = contextOps == "once";
  // Checkpoint tensors the configs do not explain: refused unless asked (SdPipeline).
  s.exec.allowExtraWeights = a.has("allow-extra-weights");

  // The run's size against the host's memory before anything large exists (the graphs,
  // the latents): an absurd config or -W/-H is one error naming the key or flag.
  {
    MemoryCapacity cap = hostCapacity();
    if (device) {
      cap.deviceBytes = device->globalMemBytes;
      cap.device = device->name;
      cap.deviceIsHost = device->isCpu();
    }
    checkModelFits({unet, vae, clip}, fitRequest(s.exec, s.batch, s.latentH, s.latentW), cap);
  }

  // Token ids: given, tokenized, or (random weights without a tokenizer) seeded.
  const int64_t tokens = clip.positions;
  // The tokenizer beside the weights, else in the architecture folder (single file).
  std::string tokDir = s.model + "/tokenizer";
  if (!fs::exists(tokDir + "/vocab.json")) tokDir = s.src.configDir + "/tokenizer";
  if (a.has("input-ids")) {
    s.condIds = idsFromFile(a.get("input-ids"), "input-ids", tokens);
    if (a.has("uncond-input-ids")) s.uncondIds = idsFromFile(a.get("uncond-input-ids"), "uncond-input-ids", tokens);
    else if (s.batch == 2) throw Error("--input-ids with guidance needs --uncond-input-ids too (or --cfg-scale 1)");
  } else if (fs::exists(tokDir + "/vocab.json")) {
    const ClipTokenizer tok = ClipTokenizer::fromFolder(tokDir);
    const auto t = tok.tokenize(a.get("prompt", ""), static_cast<int>(tokens));
    if (t.truncated())
      std::cerr << "sdspeed: note: the prompt has " << t.tokensUntruncated << " tokens; truncated to " << tokens << "\n";
    s.condIds = t.ids;
    s.uncondIds = tok.tokenize(a.get("negative-prompt", ""), static_cast<int>(tokens)).ids;
  } else if (s.src.random) {
    s.condIds = randomIds(s.seed, clip);
    s.uncondIds = randomIds(s.seed + 1, clip);
    s.seededTokens = true;
  } else {
    throw Error(s.model + ": no tokenizer/ folder (vocab.json, merges.txt): give --input-ids FILE.safetensors:TENSOR");
  }
  if (a.has("init-latents")) {
    const auto [file, tensor] = fileTensor(a.get("init-latents"), "init-latents");
    s.initLatents = SafetensorsFile(file).toFloat(tensor);
    if (const size_t i = firstNonFinite(s.initLatents); i < s.initLatents.size())
      throw Error("--init-latents " + file + ":" + tensor + " holds " + nonFiniteAt(s.initLatents, i) +
                  " (initial latents must be finite)");
  } else {
    s.initLatents = torchRandn(s.seed, {1, unet.inChannels, s.latentH, s.latentW});
  }
  return s;
}

void noteDatabase(const std::string& verb, const ExecOptions& exec, Backend& device) {
  const std::string key = device.deviceKey();
  // The chooser's file (TunedChooser: resolveKeyedPath), a legacy-named one included.
  const fs::path db = resolveKeyedPath(exec.dbDir, key, ".yaml");
  std::error_code ec;
  const std::string where = fs::absolute(db, ec).lexically_normal().string();
  if (!fs::exists(db, ec)) {
    std::cerr << "sdspeed " << verb << ": note: no tuning database for " << device.caps().name << " (key " << key
              << "): " << where << (fs::is_directory(exec.dbDir, ec) ? " does not exist" : " (no such --db-dir folder)")
              << "; ops run vendor or generic default points, often several times slower (sdspeed tune makes one)\n";
    return;
  }
  // Families whose entries were tuned against other kernels than this build's (the
  // database's source_hashes against familySourceHash): their points still run, but the
  // times that ranked the variants were another kernel's. In session 40 the H100 database
  // kept attention on flash_f16 after flash_coopmat_f16 had become 1.2x to 3.2x faster.
  TuningDatabase d;
  try {
    d = TuningDatabase::load(db.string());
  } catch (const Error&) {
    return;  // the chooser reports a malformed database itself
  }
  // Per entry (TuningDatabase::entryHash): a tune cut short leaves the family's other
  // entries stamped with the source they were tuned against (session 41: 12 of the H100
  // file's conv entries, after a capped re-tune recorded conv's new hash).
  std::map<std::string, std::pair<int, int>> counts;  // family -> (stale, entries)
  std::map<std::string, std::string> built;           // family -> this build's hash ("" none)
  for (const auto& e : d.entries()) {
    const std::string want = d.entryHash(e);
    if (want.empty()) continue;  // a file that records no hash for it: nothing to compare
    auto b = built.find(e.instance.family);
    if (b == built.end()) {
      std::string h;
      try {
        h = familySourceHash(device, findFamily(e.instance.family));
      } catch (const Error&) {
        // A family this build or backend has no kernels for: nothing to compare.
      }
      b = built.emplace(e.instance.family, h).first;
    }
    if (b->second.empty()) continue;
    auto& [staleEntries, all] = counts[e.instance.family];
    ++all;
    staleEntries += want != b->second;
  }
  std::string stale;
  for (const auto& [family, c] : counts)
    if (c.first > 0)
      stale += (stale.empty() ? "" : ", ") + family +
               (c.first == c.second ? "" : " (" + std::to_string(c.first) + " of " + std::to_string(c.second) + ")");
  if (!stale.empty())
    std::cerr << "sdspeed " << verb << ": note: " << where << ": the " << stale
              << " entries were tuned against other kernel sources than this build's; their points run as recorded, "
                 "but the times that chose them may have changed (sdspeed tune --op FAMILY --model DIR re-tunes a family)\n";
}

void printProgress(int done, int total, double unetMs) {
  if (::isatty(STDERR_FILENO)) {
    const int width = 30, fill = total ? done * width / total : width;
    std::cerr << "\r[" << std::string(static_cast<size_t>(fill), '#') << std::string(static_cast<size_t>(width - fill), '.')
              << "] step " << done << "/" << total << "  UNet " << unetMs << " ms" << (done == total ? "\n" : "")
              << std::flush;
  } else {
    std::cerr << "step " << done << "/" << total << ": UNet " << unetMs << " ms\n";
  }
}

}  // namespace sdspeed
