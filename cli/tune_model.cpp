// sdspeed tune --model DIR without --op: every family's instances of the chosen
// components under one budget (--total-points N or --total-seconds T), spent where a
// run spends its time (tuning/model_budget.h), resumable through the sweep caches,
// with one progress line and a summary of the expected gain per component.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/table.h"
#include "cli/tune_shared.h"
#include "kernels/registry.h"
#include "runtime/atomic_file.h"
#include "runtime/device_key.h"
#include "runtime/error.h"
#include "tuning/db_merge.h"
#include "tuning/model_budget.h"
#include "tuning/roofline.h"
#include "tuning/shard.h"
#include "tuning/tuner.h"
#ifdef SDSPEED_WITH_PIPELINE
#include "pipeline/exec/graph_executor.h"
#include "pipeline/run/model_shapes.h"
#endif

namespace sdspeed {

void rebuildEntry(TuningDatabase& db, const Family& fam, const OpInstance& inst, const SweepCache& cache,
                  const DeviceCaps& dev, const std::string& sourceHash) {
  std::vector<const SweepRow*> rows;
  for (const auto& r : cache.rows())
    if (r.instance == inst.text() && r.status == Status::Ok && r.device == dev.name && r.driver == dev.driverVersion &&
        r.sourceHash == sourceHash)
      rows.push_back(&r);
  db.deviceName = dev.name;
  db.driver = dev.driverVersion;
  // No point of this source ran (all failed or unsupported, or the time ran out first):
  // the entry the file held, if any, stays, stamped with its older source.
  if (!rows.empty()) db.erase(inst);
  db.setFamilyHash(fam.name(), sourceHash);  // the family's other entries keep their older hash
  for (const SweepRow* r : rows) db.record(inst, r->variant, r->params, r->medianUs, r->minUs);
}

std::optional<size_t> candidateIndex(const std::vector<Candidate>& space, const std::string& variant,
                                     const std::string& params) {
  std::optional<ParamPoint> point;  // `params` parsed once, by the first candidate of the variant
  for (size_t c = 0; c < space.size(); ++c) {
    if (space[c].variant->name != variant) continue;
    if (!point) {
      try {
        point = space[c].variant->parsePoint(params);
      } catch (const std::exception&) {
        return std::nullopt;  // the database's loader refuses such an entry first
      }
    }
    if (space[c].point == *point) return c;
  }
  return std::nullopt;
}

RecordedFirst timeRecordedPoints(const TuningDatabase& db, const OpInstance& inst, const std::vector<Candidate>& space,
                                 DeviceEvaluator& eval) {
  RecordedFirst out;
  for (const auto& e : db.entries()) {
    if (!(e.instance == inst)) continue;
    // The recorded best first: the search walks from the first known point.
    std::vector<std::pair<std::string, TunedVariant>> recorded(e.variants.begin(), e.variants.end());
    std::stable_partition(recorded.begin(), recorded.end(), [&](const auto& v) { return v.first == e.best; });
    for (const auto& [variant, tv] : recorded)
      if (const auto c = candidateIndex(space, variant, tv.params)) {
        out.indexes.push_back(*c);
        bool wasReused = false;
        const SweepRow row = eval(*c, wasReused);
        ++(wasReused ? out.reused : out.measured);
        if (row.status != Status::Ok && row.status != Status::Unsupported) ++out.failed;
      }
  }
  return out;
}

double positiveNumber(const Args& args, const std::string& name) {
  if (!args.has(name)) return 0;
  const std::string s = args.get(name);
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || !(v > 0) || !std::isfinite(v))
    throw Error("--" + name + " wants a positive number, got '" + s + "'");
  return v;
}

#ifndef SDSPEED_WITH_PIPELINE
int tuneModel(const Args&) { throw Error("tune --model needs a build with the pipeline (SDSPEED_BUILD_PIPELINE)"); }
#else
namespace {

struct ModelInstance {
  OpInstance inst;
  const Family* fam = nullptr;
  std::map<std::string, int> counts;  // component -> runs per call of it
  std::map<std::string, int> steady;  // component -> of those, runs once per image (ShapeEntry::steady)
  double estimateUs = 0;              // current time: the database's, else the cost model's
  bool fromDatabase = false;
  // Time per run: a run calls the UNet once per denoising step (unetCalls, --steps) and
  // the text encoder and the VAE decoder once, so a UNet instance weighs steps times its
  // per-call count (without this, the VAE decoder's few large convolutions outweighed the
  // UNet on the H200 and took a whole 10-minute budget: results/scale/README.md). Steady
  // runs (the text context's K and V: run once per image, `run --context-ops once`) weigh
  // one call's worth.
  double weight(int unetCalls) const {
    double n = 0;
    for (const auto& [c, k] : counts) n += runsPerRun(c, unetCalls);
    return n * estimateUs;
  }
  static int callsPerRun(const std::string& component, int unetCalls) { return component == "unet" ? unetCalls : 1; }
  // This instance's runs in `component` per run of the model: count per call x calls,
  // except the steady ones, once per image.
  double runsPerRun(const std::string& component, int unetCalls) const {
    const auto k = counts.find(component), s = steady.find(component);
    const int all = k == counts.end() ? 0 : k->second, once = s == steady.end() ? 0 : s->second;
    return static_cast<double>(all - once) * callsPerRun(component, unetCalls) + once;
  }
};

// The cost model for an instance the database has no time for: its least bytes at the
// copy bandwidth or its FLOPs at the FMA rate (configs/devices/<key>.yaml, else a
// nominal 100 GB/s and 1 TFLOP/s: only the ratios between instances matter), plus a
// launch. Deliberately not a first timing: every shard must weigh every instance alike
// (the allocation is global), and a shard cannot time other shards' instances.
double modelEstimateUs(const Family& fam, const OpInstance& inst, const Ceilings& c) {
  const auto prob = inst.problem(fam);
  const double bytes = static_cast<double>(fam.minBytes(*prob, inst.format)), flops = fam.minFlops(*prob);
  const double gbs = c.copyGBs > 0 ? c.copyGBs : 100, gflops = c.fmaGflops > 0 ? c.fmaGflops : 1000;
  return std::max(bytes / (gbs * 1e3), flops / (gflops * 1e3)) + 5.0;
}

std::string seconds(double s) { return fmtFixed(s, 0) + "s"; }

}  // namespace

int tuneModel(const Args& args) {
  for (const char* flag : {"budget", "seconds", "variant", "replay", "shape", "shapes", "attrs"})
    if (args.has(flag))
      throw Error(std::string("--") + flag + " needs --op (tune --model without --op takes --total-points or --total-seconds)");
  const double totalSeconds = positiveNumber(args, "total-seconds"), totalPointsArg = positiveNumber(args, "total-points");
  if ((totalSeconds > 0) == (totalPointsArg > 0))
    throw Error("tune --model without --op needs one of --total-seconds T or --total-points N");
  if (totalPointsArg > 0 && totalPointsArg != std::floor(totalPointsArg))
    throw Error("--total-points wants a whole number, got '" + args.get("total-points") + "'");
  const Shard shard = parseShard(args.get("shard"));
  const std::string strategyName = args.get("strategy", "random");
  makeStrategy(strategyName, {}, 1, 1);  // validates the name before any work
  const uint64_t seed = static_cast<uint64_t>(args.getInt("seed", 1));
  const int unetCalls = args.getInt("steps", 20);  // `sdspeed run`'s default steps
  if (unetCalls < 1) throw Error("--steps wants a positive number of denoising steps, got '" + args.get("steps") + "'");
  // As `run --context-ops`: once (its default) runs the text context's ops once per image,
  // every-step at every UNet call, so they weigh as often as they run.
  const std::string contextOps = args.get("context-ops", "once");
  if (contextOps != "once" && contextOps != "every-step")
    throw Error("--context-ops wants once or every-step, got '" + contextOps + "'");

  // The model's instances, merged across components (one instance may run in two).
  const std::string dir = args.get("model");
  const int64_t size = defaultImageSize(dir);
  const auto entries = modelShapes(dir, args.getInt("width", static_cast<int>(size)),
                                   args.getInt("height", static_cast<int>(size)), args.getInt("batch", 2));
  std::vector<std::string> components = args.list("component");
  if (components.empty()) components = {"text_encoder", "unet", "vae_decoder"};
  for (const auto& c : components)
    if (c != "text_encoder" && c != "unet" && c != "vae_decoder")
      throw Error("--component: unknown component '" + c + "' (known: text_encoder, unet, vae_decoder)");
  std::vector<StorageFormat> formats;
  for (const auto& s : args.list("storage")) formats.push_back(StorageFormat::parse(s));
  // Without --storage, the format `sdspeed run` computes in by default (f32 activations in
  // NC4HW4 buffers): the instances a run looks up, so the tuning serves the default run.
  if (formats.empty()) formats.push_back(StorageFormat::parse("f32.buffer.nc4hw4"));
  formats = withArithmeticFromArgs(args, withWeightFormatsFromArgs(args, formats));
  std::vector<ModelInstance> all;
  std::map<std::string, size_t> byText;
  for (const auto& e : entries) {
    if (std::find(components.begin(), components.end(), e.component) == components.end()) continue;
    const Family& fam = findFamily(e.op);
    const auto prob = fam.makeProblem(e.shape, e.attrs);
    for (const auto& f : formats) {
      const OpInstance inst = OpInstance::of(fam, *prob, f);
      auto [it, fresh] = byText.emplace(inst.text(), all.size());
      if (fresh) all.push_back({inst, &fam, {}, {}, 0, false});
      all[it->second].counts[e.component] += e.count;
      if (contextOps == "once") all[it->second].steady[e.component] += e.steady;
    }
  }
  if (all.empty()) throw Error("the model in " + dir + " has no ops in the chosen components");

  std::unique_ptr<Backend> backend = backendFromArgs(args);
  Backend& ctx = *backend;
  const DeviceCaps& dev = ctx.caps();
  const std::string key = ctx.deviceKey();
  const std::string sweepDir = args.get("sweep-dir", "results/sweeps"), dbDir = args.get("db-dir", "configs/tuned");
  // Files under the key's legacy name move to the new one once, as in tune --op.
  if (migrateKeyedPath(sweepDir, key, "")) std::cout << "moved " << sweepDir << "/" << legacyDeviceKey(key) << " to " << key << "\n";
  if (migrateKeyedPath(dbDir, key, ".yaml")) std::cout << "moved " << dbDir << "/" << legacyDeviceKey(key) << ".yaml to " << key << ".yaml\n";
  const std::string dbPath = shardPath(dbDir + "/" + key + ".yaml", shard);
  checkWritable(dbPath, "--db-dir");
  Ceilings ceilings;
  loadCeilings(args.get("devices-dir", "configs/devices") + "/" + key + ".yaml", ceilings);
  // Current choices and times from the database this command starts with (the
  // unsharded one, which shards only read): the baseline of the gain summary.
  const TunedChooser before(dbDir, key, dev);
  // One space per family and arithmetic: only the variants that compute in the
  // instance's arithmetic (computingIn).
  std::map<std::string, std::vector<Candidate>> spaces;
  auto spaceOf = [&](const ModelInstance& m) -> std::vector<Candidate>& {
    const DType a = m.inst.format.arithmetic;
    auto& space = spaces[m.fam->name() + "/" + dtypeName(a)];
    if (space.empty()) space = computingIn(tuningSpace(*m.fam, dev), a);
    return space;
  };
  std::vector<TunedChoice> prior;
  std::vector<BudgetItem> items;
  for (auto& m : all) {
    auto& space = spaceOf(m);
    // The current choice is what `sdspeed run` would take for the instance here: the
    // executor's own rule (chooseVariant: the database, else the family's default order,
    // each checked against the device's rules and this backend's kernels), so under
    // f16 arithmetic it is a half variant, not the database's f32 one.
    const auto prob = m.inst.problem(*m.fam);
    const ChoiceRefusal whyNot = [&](const TunedChoice& c) {
      return whyNotRunnable(*m.fam, c, *prob, m.inst.format, ctx);
    };
    std::string refused;
    const auto chosen = chooseVariant(before, *m.fam, m.inst, nullptr, whyNot, refused);
    TunedChoice c = before.choose(*m.fam, m.inst);
    if (chosen && (chosen->variant != c.variant || chosen->params != c.params))
      c = {chosen->variant, chosen->params, chosen->source, 0, TunedStep::GenericDefault};
    prior.push_back(c);
    m.fromDatabase = prior.back().step == TunedStep::Exact;
    m.estimateUs = m.fromDatabase ? prior.back().medianUs : modelEstimateUs(*m.fam, m.inst, ceilings);
    items.push_back({m.weight(unetCalls), space.size()});
  }
  // The order of work: heaviest first, so a time budget that runs out leaves the
  // instances that matter least.
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].weight > items[b].weight; });
  std::vector<size_t> points(all.size(), 0);
  if (totalPointsArg > 0) points = allocatePoints(items, static_cast<size_t>(totalPointsArg));
  double allWeight = 0, ownWeight = 0;
  size_t ownCount = 0, ownPoints = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    allWeight += items[i].weight;
    if (shard.owns(all[i].inst.text())) ownWeight += items[i].weight, ++ownCount, ownPoints += points[i];
  }
  const double shardSeconds = totalSeconds > 0 ? totalSeconds * (allWeight > 0 ? ownWeight / allWeight : 1.0) : 0;
  std::cout << "device " << key << ": " << dev.name << " (driver " << dev.driverVersion << ")\n"
            << "model " << dir << ": " << all.size() << " instances";
  if (shard.sharded()) std::cout << ", shard " << shard.text() << " tunes " << ownCount;
  std::cout << "; strategy " << strategyName << ", "
            << (totalSeconds > 0 ? "budget " + seconds(shardSeconds) + " of " + seconds(totalSeconds)
                                 : "budget " + std::to_string(ownPoints) + " of " + args.get("total-points") + " points")
            << " (+ each instance's current choice, measured first)\n";

  TuningDatabase db = TuningDatabase::loadOrEmpty(dbPath, key, dev);
  std::map<std::string, std::unique_ptr<SweepCache>> caches;
  const TimingPolicy policy = timingPolicyFromArgs(args);
  const int threads = args.getInt("threads", static_cast<int>(std::max(1u, std::thread::hardware_concurrency() - 1)));
  if (threads < 1) throw Error("--threads must be at least 1");
  const bool tty = ::isatty(STDOUT_FILENO);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  double remainingWeight = ownWeight;
  int failures = 0;
  size_t done = 0, measured = 0, reused = 0, tunedCount = 0;
  std::vector<double> priorUs(all.size(), NAN), afterUs(all.size(), NAN);
  for (size_t i : order) {
    ModelInstance& m = all[i];
    if (!shard.owns(m.inst.text())) continue;
    const Family& fam = *m.fam;
    const auto& space = spaceOf(m);
    double slice = 0;
    size_t budget = points[i];
    if (totalSeconds > 0) {
      slice = timeSlice(shardSeconds - elapsed(), items[i].weight, remainingWeight);
      remainingWeight -= items[i].weight;
      budget = slice > 0 ? space.size() : 0;
    }
    ++done;
    if (budget == 0 || space.empty()) continue;
    ++tunedCount;
    auto& cache = caches[fam.name()];
    if (!cache)
      cache = std::make_unique<SweepCache>(shardPath(sweepDir + "/" + key + "/" + fam.name() + ".csv", shard),
                                           familyParamNames(fam));
    const double sliceStart = elapsed();
    DeviceEvaluator eval(ctx, fam, m.inst, space, *cache, policy, seed);
    // The current choice first: its time is the "before" of the summary, and the search
    // starts from it (on a device with no database yet it is a sibling's tuned point,
    // through the vendor fallback: the H200 starts where the H100's tune ended).
    std::vector<size_t> known;
    if (const auto c = candidateIndex(space, prior[i].variant, prior[i].params)) {
      known.push_back(*c);
      bool wasReused = false;
      const SweepRow row = eval(*c, wasReused);
      (wasReused ? reused : measured)++;
      if (row.status == Status::Ok) priorUs[i] = row.medianUs;
      else if (row.status != Status::Unsupported) ++failures;
    }
    const ProblemPtr prob = m.inst.problem(fam);
    auto strategy = makeStrategy(strategyName, space, budget, seed, prob.get(), known);
    std::vector<size_t> ahead = strategy->plannedOrder();
    if (ahead.size() > budget) ahead.resize(budget);
    if (!ahead.empty()) eval.prebuild(ahead, threads);
    const double left = totalSeconds > 0 ? std::max(1e-3, slice - (elapsed() - sliceStart)) : 0;
    auto progress = [&](size_t n, size_t, const SweepRow&, const SearchResult& res) {
      if (!tty) return;  // a log gets one line per instance, below
      char line[512];
      std::snprintf(line, sizeof line, "[%zu/%zu instances] %zu measured, %zu reused | %s | %s %zu points%s", done,
                    ownCount, measured + static_cast<size_t>(res.measured), reused + static_cast<size_t>(res.reused),
                    totalSeconds > 0 ? (seconds(elapsed()) + " of " + seconds(shardSeconds)).c_str() : "",
                    m.inst.text().c_str(), n, res.bestIndex >= 0 ? " (ok)" : "");
      std::cout << "\r\033[K" << line << std::flush;
    };
    // The known point, proposed again, is a cache hit beside the budget.
    SearchResult res = runSearch(space, *strategy, std::min(space.size(), budget + strategy->knownProposals()), left,
                                 [&](size_t c, bool& r) { return eval(c, r); }, progress);
    measured += static_cast<size_t>(res.measured);
    reused += static_cast<size_t>(res.reused);
    failures += res.failed;
    rebuildEntry(db, fam, m.inst, *cache, dev, familySourceHash(ctx, fam));
    db.save(dbPath);  // after every instance: a killed run keeps what it finished
    for (const auto& e : db.entries())
      if (e.instance == m.inst) afterUs[i] = e.variants.at(e.best).medianUs;
    if (!tty)
      std::cout << "[" << done << "/" << ownCount << " instances] " << measured << " measured, " << reused
                << " reused" << (totalSeconds > 0 ? " | " + seconds(elapsed()) + " of " + seconds(shardSeconds) : "")
                << " | " << m.inst.text() << ": " << res.rows.size() << " points" << std::endl;
  }
  if (tty) std::cout << "\n";
  if (totalSeconds > 0 && tunedCount < ownCount)
    std::cout << ownCount - tunedCount << " of " << ownCount
              << " instances not reached: the time ran out before these, the lightest (a larger --total-seconds "
                 "reaches them; the same command again reuses every measured point and spends its time on new ones)\n";

  // Expected gain per component call: count x (current choice's time - tuned best),
  // over the instances whose current choice was measured here; a UNet instance's steady
  // runs count 1/--steps per call (once per image).
  TextTable table({"component", "instances", "with baseline", "before ms", "after ms", "gain ms", "gain"});
  for (const auto& comp : components) {
    int n = 0, based = 0;
    double b = 0, a = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      auto it = all[i].counts.find(comp);
      if (it == all[i].counts.end() || !shard.owns(all[i].inst.text())) continue;
      ++n;
      if (std::isnan(priorUs[i]) || std::isnan(afterUs[i])) continue;
      ++based;
      const double perCall = all[i].runsPerRun(comp, unetCalls) / ModelInstance::callsPerRun(comp, unetCalls);
      b += perCall * priorUs[i] / 1e3;
      a += perCall * std::min(priorUs[i], afterUs[i]) / 1e3;
    }
    if (n == 0) continue;
    table.add({comp, std::to_string(n), std::to_string(based), fmtFixed(b, 3), fmtFixed(a, 3), fmtFixed(b - a, 3),
                  b > 0 ? fmtFixed(100.0 * (b - a) / b, 1) + "%" : "-"});
  }
  std::cout << "expected run-time gain per component call (current choice -> tuned best, instances measured here):\n";
  table.print(std::cout);
  std::cout << measured << " measured, " << reused << " reused, " << failures << " failed in " << seconds(elapsed())
            << "\ndatabase: " << dbPath << "\n";
  return failures ? 3 : 0;
}
#endif

}  // namespace sdspeed
