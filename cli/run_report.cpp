#include "cli/run_report.h"

#include <algorithm>
#include <map>
#include <cstdio>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "pipeline/model/sd_graphs.h"
#include "runtime/timing.h"
#include "tuning/tuner.h"

namespace sdspeed {
namespace {

std::string gb(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f GB", static_cast<double>(bytes) * 1e-9);
  return b;
}

std::string mib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return b;
}

// Device memory in both units people quote: GB (10^9 bytes) and GiB (2^30).
std::string gbAndGib(uint64_t bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f GB (%.3f GiB)", static_cast<double>(bytes) / 1e9,
                static_cast<double>(bytes) / (1ull << 30));
  return b;
}

std::string ms(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

// Median/min/max of the UNet calls (runtime/timing.h), zeros for a run without any.
TimingStats unetStats(const DiffusionResult& r) { return r.unetMs.empty() ? TimingStats{} : summarize(r.unetMs); }

// "exact", "nearest ...", "device default", "vendor default (...)", "generic
// default", "defaults; not ...", "defaults; fallback, ..." -> the kind only; a half twin
// run at its f32 base's point (graph_executor.cpp) keeps the base's kind, marked, since
// the twin itself was not timed there.
std::string sourceKind(const std::string& s) {
  if (s.find("fallback") != std::string::npos) return "fallback";
  const std::string twin = s.find("; its half twin") != std::string::npos ? " (half twin)" : "";
  for (const char* k :
       {"exact", "nearest", "device default", "vendor default", "generic default", "f32-weight entry", "defaults"})
    if (s.rfind(k, 0) == 0) return k + twin;
  return s;
}

struct ProfileRow {
  std::string instance, variant;
  std::string params;  // sourceKind of its nodes' points ("mixed" where they differ)
  int calls = 0;
  double us = 0;
  int nodes = 0;
  uint64_t scratchBytes = 0;   // the largest of its nodes' (each alive for its op alone)
  uint64_t streamedBytes = 0;  // summed over its nodes, per run
  int derivedPerCall = 0;      // nodes making derived weights per call
};

std::vector<ProfileRow> profileRows(const std::vector<OpProfile>& profile) {
  std::map<std::string, ProfileRow> by;
  for (const auto& p : profile) {
    auto& row = by[p.instance + " " + p.variant];
    row.instance = p.instance;
    row.variant = p.variant;
    const std::string kind = sourceKind(p.params);
    row.params = row.nodes == 0 || row.params == kind ? kind : "mixed";
    row.calls += p.calls;
    row.us += p.us;
    ++row.nodes;
    row.scratchBytes = std::max(row.scratchBytes, p.scratchBytes);
    row.streamedBytes += p.streamedBytes;
    row.derivedPerCall += p.derivedPerCall ? 1 : 0;
  }
  std::vector<ProfileRow> rows;
  for (auto& [k, v] : by) rows.push_back(v);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.us > b.us; });
  return rows;
}

// Per op instance: its scratch (MiB, the largest of its nodes': each op's own peak
// besides its tensors), weights streamed ahead of it per run (MiB), how many of its
// nodes make derived weights per call ("pc N") and where its point came from (params:
// "exact" is the database's entry for this instance; anything else ran a point tuned
// for another instance or none, which is where a tune of the instance may pay).
const char* const kProfileHeader =
    "  count   total ms   share  scratch MiB  streamed MiB  derived  params            variant                 op instance\n";

std::string memoryColumns(const ProfileRow& row) {
  char b[96];
  std::snprintf(b, sizeof b, "%11.2f  %12.2f  %7s", static_cast<double>(row.scratchBytes) / (1 << 20),
                static_cast<double>(row.streamedBytes) / (1 << 20),
                row.derivedPerCall ? ("pc " + std::to_string(row.derivedPerCall)).c_str() : "-");
  return b;
}

std::string profileLine(double count, double ms, double share, const ProfileRow& row) {
  char line[768];
  // %5.3g: ops run once per image (--context-ops once) count a fraction per iteration.
  std::snprintf(line, sizeof line, "  %5.3g %10.3f %6.1f%%  %s  %-16s  %-22s  %s\n", count, ms, share,
                memoryColumns(row).c_str(), row.params.c_str(), row.variant.c_str(), row.instance.c_str());
  return line;
}

// The profile's time on points not tuned for their instance (rows: instance and variant,
// so an instance whose nodes ran two variants counts twice): what a tune of those
// instances could still win back (tune --shape ... --attrs ... per line above;
// scripts/dev/untuned-instances.py lists them from the report). `calls`: the runs the
// rows' times sum (the UNet's steps), so the figure is per run as the rows are.
std::string untunedLine(const std::vector<ProfileRow>& rows, double calls) {
  int n = 0;
  double us = 0, total = 0;
  for (const auto& row : rows) {
    total += row.us;
    if (row.params == "exact") continue;
    ++n;
    us += row.us;
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "  params not exact (a point tuned for another instance or none, or refused): %d of %zu rows, %.3f ms (%.1f%% of the ops' time)\n",
                n, rows.size(), us / calls / 1000, total > 0 ? 100.0 * us / total : 0.0);
  return line;
}

}  // namespace

void RunReport::collect(SdPipeline& pipe) {
  components.clear();
  for (const char* name : {"text_encoder", "unet", "vae_decoder"}) {
    if (!pipe.built(name)) continue;
    ComponentReport c;
    c.name = name;
    const ComponentStats st = pipe.stats(name);
    c.nodes = st.nodes;
    c.memory = st.memory;
    c.deviceBytes = st.deviceBytes;
    c.tiling = st.tiling;
    c.weights = componentWeightFormat(exec, name);
    if (auto s = result->setup.find(name); s != result->setup.end()) c.setup = s->second;
    for (size_t i = 0; i < st.choices.size(); ++i) {
      ++c.variants[st.families[i] + "/" + st.choices[i].variant];
      ++c.sources[sourceKind(st.choices[i].source)];
    }
    // Batch 1 (no guidance) plans, in the run's format and in half storage.
    const std::string comp = name;
    auto graphAt1 = [&]() -> Graph {
      if (comp == "text_encoder") return buildTextEncoderGraph(pipe.clipConfig(), 1, pipe.tokens(), "text_model.");
      if (comp == "unet") return buildUNetGraph(pipe.unetConfig(), 1, pipe.latentH(), pipe.latentW(), pipe.tokens());
      return buildVaeDecoderGraph(pipe.vaeConfig(), 1, pipe.latentH(), pipe.latentW());
    };
    const Graph g1 = graphAt1();
    StorageFormat f16 = exec.format;
    f16.dtype = DType::F16;
    const uint64_t al = pipe.alignment();
    c.plansBatch1 = planSizes(activationUsage(g1, exec.format), al);
    c.plansBatch1F16 = planSizes(activationUsage(g1, f16), al);
    components.push_back(std::move(c));
  }
}

void RunReport::print(std::ostream& os) const {
  if (randomWeights)
    os << "RANDOM WEIGHTS (seeded): the image is noise; this run measures time and memory only"
       << (seededTokens ? " (seeded token ids: the model has no tokenizer)" : "") << "\n";
  os << "model: " << source << "\n";
  os << "device: " << device.name << " (" << device.driverVersion << ", " << apiVersion << ")"
     << ", activations " << exec.format.withWeights(DType::F32).withArithmetic(DType::F32).name() << ", weights "
     << weightsSpecText(exec) << ", arithmetic " << dtypeName(exec.format.arithmetic) << ", planner " << exec.planner
     << "\n";
  os << "run: " << width << "x" << height << ", " << steps << " steps of " << scheduler << ", batch " << batch
     << ", seed " << seed << (image.empty() ? "" : ", image " + image) << "\n\n";
  const DiffusionResult& r = *result;
  os << "component      time (ms, device)\n";
  os << "text encoder   " << ms(r.textMs) << "\n";
  const TimingStats unet = unetStats(r);
  if (!r.unetMs.empty()) {
    os << "UNet / step    min " << ms(unet.minMs) << "  median " << ms(unet.medianMs) << "  max " << ms(unet.maxMs) << "  ("
       << r.unetMs.size() << " UNet calls, sum " << ms(std::accumulate(r.unetMs.begin(), r.unetMs.end(), 0.0)) << ")\n";
    const int reused = r.unetReusedOps.empty() ? 0 : *std::max_element(r.unetReusedOps.begin(), r.unetReusedOps.end());
    if (reused > 0)
      os << "               " << reused << " ops of the text context (K and V) ran once, at the first step, reused by "
         << std::count_if(r.unetReusedOps.begin(), r.unetReusedOps.end(), [](int n) { return n > 0; })
         << " later calls (--context-ops every-step runs them every step)\n";
    // The last call's (a later one: no text-context ops) commands and barriers, where counted.
    if (!r.unetDispatches.empty() && r.unetDispatches.back() > 0) {
      const uint64_t d = r.unetDispatches.back(), b = r.unetBarriers.back();
      os << "               last call: " << d << " dispatches, " << b << " barriers";
      if (d > b) os << " (" << d - b << " left out: no written range shared with the dispatches since the last barrier)";
      os << "\n";
    }
  }
  if (!r.decoded.empty()) os << "VAE decoder    " << ms(r.vaeMs) << "\n";
  os << "total (device) " << ms(deviceTotalMs()) << "   (text encoder + every UNet call + VAE decoder)\n";
  os << "total (wall)   " << ms(r.totalMs) << "   (the same on the host clock, scheduler and transfers included)\n";
  os << "setup (wall)   " << ms(setupTotalMs())
     << "   (per component below: weights loaded and uploaded, programs built, warm-up runs; not in the totals)\n";
  for (const auto& c : components)
    os << "  " << std::left << std::setw(13) << c.name << "setup " << ms(c.setup.setupMs()) << " ms (load "
       << ms(c.setup.loadMs) << ", warm-up " << ms(c.setup.warmUpMs) << " in " << c.setup.warmUpRuns << " runs)"
       << (r.keptResident ? "" : ", release " + ms(c.setup.releaseMs)) << "\n";
  os << "\n";
  os << "memory         weights           scratch     activations (" << exec.planner
     << ")   device footprint   f16 batch-1 plan (greedy-by-size / naive)\n";
  for (const auto& c : components) {
    std::ostringstream w;
    w << mib(c.memory.weightBytes) << " (" << dtypeName(c.weights) << ")";
    os << std::left << std::setw(15) << c.name << std::setw(18) << w.str() << std::setw(12)
       << mib(c.memory.scratchBytes) << std::setw(26) << mib(c.memory.activationBytes) << std::setw(19)
       << mib(c.deviceBytes) << mib(c.plansBatch1F16.at("greedy-by-size")) << " / " << mib(c.plansBatch1F16.at("naive"))
       << "\n";
  }
  os << "memory detail  derived-w   scratch peak  planned scratch  streamed/run  estimate    (derived weights "
     << (exec.derivedWeightsPerCall ? "per call" : "resident") << ", scratch " << (exec.planScratch ? "planned" : "own")
     << ")\n";
  for (const auto& c : components) {
    os << std::left << std::setw(15) << c.name << std::setw(12) << mib(c.memory.derivedWeightBytes) << std::setw(14)
       << mib(c.memory.scratchPeakBytes) << std::setw(17) << mib(c.memory.plannedScratchBytes) << std::setw(14)
       << mib(c.memory.streamedBytes) << mib(c.memory.estimatedBytes) << "\n";
    for (const auto& choice : c.memory.budgetChoices) os << "  budget: " << choice << "\n";
    // int8/int4: which weights are blocks and which stayed f16, and why (kernels/QUANTIZATION.md).
    for (const auto& [fmt, g] : c.memory.weightGroups)
      os << "  weights " << fmt << ": " << g.tensors << " tensors, " << mib(g.bytes) << "\n";
    // Per layer kind (--weights KIND=FORMAT): what each kind runs in and holds.
    if (!c.memory.weightGroups.empty() || !exec.kindWeights.empty()) {
      os << "  weights by kind:";
      for (const auto& [kind, g] : c.memory.weightKinds)
        os << " " << kind << " " << g.format << " (" << g.tensors << " tensors, " << mib(g.bytes) << ")";
      os << "\n";
    }
    if (c.memory.floatFromFileBytes)
      os << "  weights: " << mib(c.memory.floatFromFileBytes) << " of f32/f16 weights uploaded as the file holds them (no conversion)\n";
    if (c.memory.quantizedFromFileBytes)
      os << "  weights: " << mib(c.memory.quantizedFromFileBytes) << " of int8/int4 blocks uploaded as the file holds them (sdspeed quantize or GGUF)\n";
    if (c.tiling.tiled()) os << "  tiles: " << c.tiling.describe() << "\n";
    if (c.memory.streamedBytes || c.memory.streamedOnceBytes)
      os << "  streamed weights: " << mib(c.memory.stagingHostBytes) << " from packed host copies, "
         << mib(c.memory.streamedMappedBytes) << " from the mapped checkpoint (host memory), uploaded "
         << (c.memory.stagingRingBytes ? "through a pinned staging ring of " + mib(c.memory.stagingRingBytes) + " (counted)"
                                       : std::string("from pageable memory"))
         << "\n";
    if (c.memory.streamedOnceBytes)
      os << "  streamed once per image: " << mib(c.memory.streamedOnceBytes)
         << " of weights only the text context's ops read (K and V), uploaded when those run (not in streamed/run)\n";
  }
  if (exec.memoryBudget)
    os << "memory budget " << gb(exec.memoryBudget) << " per component\n";
  os << "components: "
     << (r.keptResident ? "kept resident (all loaded up front and held to the end: the peak is their sum)"
                        : "released (each loaded before it first runs, freed once its output exists: the peak is the "
                          "largest one)")
     << "\n";
  os << "device memory high-water mark (everything sdspeed allocated): " << mib(peakBytes) << " = " << gbAndGib(peakBytes)
     << "\n\n";
  os << "variants run:\n";
  for (const auto& c : components) {
    os << "  " << c.name << ":";
    for (const auto& [v, n] : c.variants) os << " " << v << " x" << n;
    os << "  [params:";
    for (const auto& [s, n] : c.sources) os << " " << s << " " << n;
    os << "]\n";
  }
  if (!r.profile.empty()) {
    const double unetUs = 1000.0 * unet.medianMs;
    const double calls = static_cast<double>(r.unetMs.size());
    os << "\nUNet profile per iteration (median UNet " << ms(unetUs / 1000) << " ms; op instances, most costly first)\n";
    os << kProfileHeader;
    const auto rows = profileRows(r.profile);
    for (const auto& row : rows)
      os << profileLine(row.calls / calls, row.us / calls / 1000, 100.0 * row.us / calls / unetUs, row);
    os << untunedLine(rows, calls);
  }
  if (!r.vaeProfile.empty()) {
    os << "\nVAE decoder profile (" << ms(r.vaeMs) << " ms; op instances, most costly first)\n";
    os << kProfileHeader;
    const auto rows = profileRows(r.vaeProfile);
    for (const auto& row : rows) os << profileLine(row.calls, row.us / 1000, 100.0 * row.us / 1000 / r.vaeMs, row);
    os << untunedLine(rows, 1);
  }
}

double RunReport::setupTotalMs() const {
  double t = 0;
  for (const auto& [c, s] : result->setup) t += s.setupMs();
  return t;
}

double RunReport::deviceTotalMs() const {
  double t = result->textMs + result->vaeMs;
  for (double u : result->unetMs) t += u;
  return t;
}

nlohmann::json RunReport::json() const {
  using nlohmann::json;
  const DiffusionResult& r = *result;
  json j;
  j["random_weights"] = randomWeights;
  j["seeded_token_ids"] = seededTokens;
  j["model"] = source;
  j["provenance"] = {{"sdspeed_commit", sdspeedCommit()},
                     {"device", device.name},
                     {"device_key", deviceKey},
                     {"driver", device.driverVersion},
                     {"api", device.api},
                     {"api_version", apiVersion},
                     {"tuning_database", dbPath},
                     {"tuning_database_found", dbExists}};
  j["run"] = {{"width", width}, {"height", height}, {"steps", steps}, {"scheduler", scheduler}, {"batch", batch},
              {"seed", seed}, {"format", exec.format.withWeights(DType::F32).withArithmetic(DType::F32).name()},
              {"weights", weightsSpecText(exec)}, {"arithmetic", dtypeName(exec.format.arithmetic)}, {"backend", device.api},
              {"planner", exec.planner}, {"image", image},
              {"scratch", exec.planScratch ? "planned" : "own"},
              {"derived_weights", exec.derivedWeightsPerCall ? "per-call" : "resident"},
              {"memory_budget_bytes", exec.memoryBudget},
              {"arena_binding", exec.arenaSubBuffers ? "sub-buffers" : "offsets"},
              {"stream_staging", exec.pinnedStaging ? "ring" : "pageable"},
              {"context_ops", exec.reuseSteadyOps ? "once" : "every-step"}};
  j["variant_overrides"] = exec.variants;
  // Per UNet call: the commands recorded and the barriers before them (0 where not counted).
  j["commands"] = {{"unet_dispatches", r.unetDispatches}, {"unet_barriers", r.unetBarriers}};
  const TimingStats unet = unetStats(r);
  j["time_ms"] = {{"text_encoder", r.textMs},
                  {"unet_steps", r.unetMs},
                  {"unet_min", unet.minMs},
                  {"unet_median", unet.medianMs},
                  {"unet_max", unet.maxMs},
                  {"unet_reused_ops", r.unetReusedOps},
                  {"vae_decoder", r.vaeMs},
                  {"total_device", deviceTotalMs()},
                  {"total_wall", r.totalMs},
                  {"setup_wall", setupTotalMs()}};
  j["memory"]["device_high_water_bytes"] = peakBytes;
  j["memory"]["device_high_water_gb"] = static_cast<double>(peakBytes) / 1e9;
  j["memory"]["device_high_water_gib"] = static_cast<double>(peakBytes) / (1ull << 30);
  j["memory"]["components_released"] = !r.keptResident;
  for (const auto& c : components) {
    json m = {{"weights_bytes", c.memory.weightBytes},
              {"weights_format", dtypeName(c.weights)},
              {"weights_quantized_from_file_bytes", c.memory.quantizedFromFileBytes},
              {"weights_float_from_file_bytes", c.memory.floatFromFileBytes},
              {"weights_by_format", [&] {
                 json g = json::object();
                 for (const auto& [fmt, w] : c.memory.weightGroups) g[fmt] = {{"tensors", w.tensors}, {"bytes", w.bytes}};
                 return g;
               }()},
              {"weights_by_kind", [&] {
                 json g = json::object();
                 for (const auto& [kind, w] : c.memory.weightKinds)
                   g[kind] = {{"format", w.format}, {"tensors", w.tensors}, {"bytes", w.bytes}};
                 return g;
               }()},
              {"scratch_bytes", c.memory.scratchBytes},
              {"activation_bytes", c.memory.activationBytes},
              {"plans_run_batch", c.memory.planBytes},
              {"plans_batch1", c.plansBatch1},
              {"plans_batch1_f16", c.plansBatch1F16},
              {"derived_weight_bytes", c.memory.derivedWeightBytes},
              {"scratch_peak_bytes", c.memory.scratchPeakBytes},
              {"planned_scratch_bytes", c.memory.plannedScratchBytes},
              {"streamed_bytes_per_run", c.memory.streamedBytes},
              {"streamed_once_bytes", c.memory.streamedOnceBytes},
              {"streamed_host_copy_bytes", c.memory.stagingHostBytes},
              {"streaming_ring_bytes", c.memory.stagingRingBytes},
              {"streamed_from_mapped_checkpoint_bytes", c.memory.streamedMappedBytes},
              {"estimated_bytes", c.memory.estimatedBytes},
              {"budget_choices", c.memory.budgetChoices},
              {"device_footprint_bytes", c.deviceBytes}};
    if (c.tiling.tiled())
      m["tiling"] = {{"tile_latents", {c.tiling.tileH, c.tiling.tileW}}, {"overlap_latents", c.tiling.overlap},
                     {"tiles", c.tiling.tiles()}, {"why", c.tiling.why}, {"seam_max_abs", c.tiling.seamMaxAbs},
                     {"seam_rms", c.tiling.seamRms}};
    j["memory"]["components"][c.name] = m;
    j["setup_ms"][c.name] = {{"setup", c.setup.setupMs()},
                             {"load", c.setup.loadMs},
                             {"warm_up", c.setup.warmUpMs},
                             {"warm_up_runs", c.setup.warmUpRuns},
                             {"release", c.setup.releaseMs}};
    j["variants"][c.name] = c.variants;
    j["param_sources"][c.name] = c.sources;
    j["ops"][c.name] = c.nodes;
  }
  if (!r.profile.empty()) {
    const double calls = static_cast<double>(r.unetMs.size());
    for (const auto& row : profileRows(r.profile))
      j["unet_profile"].push_back({{"instance", row.instance},
                                   {"variant", row.variant},
                                   {"params", row.params},
                                   {"count_per_step", row.calls / calls},
                                   {"ms_per_step", row.us / calls / 1000},
                                   {"scratch_bytes", row.scratchBytes},
                                   {"streamed_bytes_per_step", row.streamedBytes},
                                   {"derived_per_call_nodes", row.derivedPerCall}});
  }
  for (const auto& row : profileRows(r.vaeProfile))
    j["vae_profile"].push_back({{"instance", row.instance}, {"variant", row.variant}, {"params", row.params},
                                {"count", row.calls}, {"ms", row.us / 1000},
                                {"scratch_bytes", row.scratchBytes}, {"streamed_bytes", row.streamedBytes},
                                {"derived_per_call_nodes", row.derivedPerCall}});
  return j;
}

std::string fallbackNote(SdPipeline& pipe) {
  std::map<std::string, int> reasons;  // "component: refused point: why" -> ops
  std::vector<std::string> order;      // first seen first
  int ops = 0;
  for (const char* c : {"text_encoder", "unet", "vae_decoder"}) {
    if (!pipe.built(c)) continue;
    for (const NodeChoice& ch : pipe.stats(c).choices) {
      const auto at = ch.source.find("; fallback, ");
      if (at == std::string::npos) continue;
      const std::string why = std::string(c) + ": " + ch.source.substr(at + 12);
      if (!reasons.count(why)) order.push_back(why);
      ++reasons[why];
      ++ops;
    }
  }
  if (!ops) return "";
  std::string line = std::to_string(ops) + " op" + (ops > 1 ? "s" : "") + " ran a fallback variant, their chosen point unable to run here:";
  for (size_t i = 0; i < order.size() && i < 3; ++i)
    line += std::string(i ? ";" : "") + " " + order[i] + " (" + std::to_string(reasons[order[i]]) + " op" +
            (reasons[order[i]] > 1 ? "s" : "") + ")";
  if (order.size() > 3) line += "; and " + std::to_string(order.size() - 3) + " more reasons (--report lists each op)";
  return line;
}

}  // namespace sdspeed
