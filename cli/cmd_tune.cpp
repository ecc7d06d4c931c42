#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <cmath>
#include <iostream>
#include <optional>
#include <set>

#include "runtime/device_key.h"
#include "cli/commands.h"
#ifdef SDSPEED_WITH_PIPELINE
#include "pipeline/run/model_shapes.h"
#endif
#include "cli/table.h"
#include "kernels/registry.h"
#include "runtime/atomic_file.h"
#include "runtime/file_lock.h"
#include "runtime/opencl/cl_error.h"
#include "cli/tune_shared.h"
#include "tuning/check.h"
#include "tuning/database.h"
#include "tuning/shard.h"
#include "tuning/shape_set.h"
#include "tuning/tuner.h"

namespace sdspeed {
namespace {

std::vector<std::string> paramNames(const Family& fam) {
  std::set<std::string> names;
  for (const auto& v : fam.variants())
    for (const auto& p : v.params) names.insert(p.name);
  return {names.begin(), names.end()};
}

// The op instances to tune: --shape (with --attrs) or the family's entries of a
// shape set, most costly (count x elements) first, each once.
std::vector<OpInstance> instancesFromArgs(const Args& args, const Family& fam, const std::vector<StorageFormat>& formats) {
  std::vector<std::pair<double, OpInstance>> weighted;
  if (args.has("shapes")) {
    for (const auto& e : loadShapeSet(args.get("shapes")))
      if (e.op == fam.name()) {
        ProblemPtr prob;
        try {
          prob = fam.makeProblem(e.shape, e.attrs);  // validates the attributes
        } catch (const Error& err) {  // which file and entry: the family's message names neither
          throw Error("shape set " + args.get("shapes") + ": " + e.op + " " + e.shape.text() + ": " + err.what());
        }
        for (const auto& f : formats) weighted.push_back({e.weight(), OpInstance::of(fam, *prob, f)});
      }
    if (weighted.empty()) throw Error("shape set " + args.get("shapes") + " has no " + fam.name() + " instances");
  }
#ifdef SDSPEED_WITH_PIPELINE
  if (args.has("model")) {
    // The model graph's instances, in its cost order (the most costly first).
    const std::string dir = args.get("model");
    const int64_t size = defaultImageSize(dir);
    const auto entries = modelShapes(dir, args.getInt("width", static_cast<int>(size)),
                                     args.getInt("height", static_cast<int>(size)), args.getInt("batch", 2));
    const std::string component = args.get("component");
    for (size_t i = 0; i < entries.size(); ++i)
      if (entries[i].op == fam.name() && (component.empty() || entries[i].component == component)) {
        auto prob = fam.makeProblem(entries[i].shape, entries[i].attrs);
        for (const auto& f : formats)
          weighted.push_back({static_cast<double>(entries.size() - i), OpInstance::of(fam, *prob, f)});
      }
    if (weighted.empty()) throw Error("the model in " + dir + " has no " + fam.name() + " ops");
  }
#endif
  for (const auto& s : args.list("shape")) {
    auto prob = fam.makeProblem(parseShape(s), attrsFromArgs(args));
    for (const auto& f : formats) weighted.push_back({0, OpInstance::of(fam, *prob, f)});
  }
  if (weighted.empty()) throw Error("tune needs --shape, --shapes or --model");
  std::stable_sort(weighted.begin(), weighted.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<OpInstance> out;
  for (const auto& [w, inst] : weighted)
    if (std::find(out.begin(), out.end(), inst) == out.end()) out.push_back(inst);
  return out;
}

std::string us(double v) { return fmtFixed(v, 2) + " us"; }

ProgressFn progressPrinter() {
  const bool tty = ::isatty(STDOUT_FILENO);
  auto start = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [tty, start](size_t done, size_t budget, const SweepRow& row, const SearchResult& res) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
    const double eta = done ? elapsed / done * (budget - done) : 0;
    std::string best = res.bestIndex >= 0 ? us(res.rows[res.bestIndex].medianUs) + " " + res.rows[res.bestIndex].variant
                                          : "-";
    std::string point = row.variant + " [" + row.params + "] " + statusName(row.status) +
                        (row.status == Status::Ok ? " " + us(row.medianUs) : "");
    char line[512];
    std::snprintf(line, sizeof line, "[%zu/%zu] failures %d | best %s | eta %.0fs | %s", done, budget, res.failed,
                  best.c_str(), eta, point.c_str());
    if (tty) {
      std::cout << "\r\033[K" << line << std::flush;
      if (done == budget) std::cout << "\n";
    } else {
      // Flushed line by line: a log file must keep every line of a sweep that a
      // timeout kills (a block-buffered log of a killed sweep was empty).
      std::cout << line << std::endl;
    }
  };
}

int replay(const Args& args, const Family& fam, const std::vector<OpInstance>& instances) {
  const SweepCache recording(args.get("replay"), paramNames(fam), /*readOnly=*/true);
  DeviceInfo any;  // replay has no device: the recording says what ran
  any.type = DeviceType::Gpu;
  any.maxWorkGroupSize = SIZE_MAX;
  any.localMemBytes = UINT64_MAX;
  for (const auto& inst : instances) {
    std::set<std::string> recorded;
    for (const auto& r : recording.rows())
      if (r.instance == inst.text()) recorded.insert(r.variant + " [" + r.params + "]");
    std::vector<Candidate> space;
    for (auto& c : tuningSpace(fam, any, args.list("variant")))
      if (recorded.count(c.text())) space.push_back(c);
    if (space.empty()) throw Error("the recording " + args.get("replay") + " has no points of '" + inst.text() + "'");
    double exhaustiveBest = INFINITY;
    for (const auto& r : recording.rows())
      if (r.instance == inst.text() && r.status == Status::Ok) exhaustiveBest = std::min(exhaustiveBest, r.medianUs);
    const size_t budget = parseBudget(args.get("budget"), space.size());
    auto strategy = makeStrategy(args.get("strategy", "exhaustive"), space, budget, args.getInt("seed", 1));
    SearchResult res = runSearch(space, *strategy, budget, 0, replayEvaluator(recording.rows(), inst.text(), space));
    std::cout << "replay " << inst.text() << ": strategy " << args.get("strategy", "exhaustive") << ", "
              << res.rows.size() << " of " << space.size() << " points";
    if (res.bestIndex >= 0) {
      const auto& b = res.rows[res.bestIndex];
      // "within 5%" is decided here on the exact ratio: a rounded one (1.050x for
      // 1.05004x) misled a count by grep once.
      std::cout << ", best " << b.variant << " [" << b.params << "] " << us(b.medianUs) << " = "
                << fmtFixed(b.medianUs / exhaustiveBest, 4) << "x the recorded best " << us(exhaustiveBest)
                << (b.medianUs <= 1.05 * exhaustiveBest ? " (within 5%)" : " (not within 5%)");
    }
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

int cmdTune(const std::vector<std::string>& argv) {
  auto options = kDeviceOptions;
  options.insert({"op", "shape", "shapes", "attrs", "storage", "weights", "arithmetic", "variant", "strategy", "budget", "seconds", "seed",
                  "replay", "sweep-dir", "db-dir", "min-ms", "warmup", "warmup-ms", "llc-mib", "threads", "model", "width", "height",
                  "batch", "component", "shard", "total-seconds", "total-points", "devices-dir", "steps",
                  "context-ops"});
  auto flags = kDeviceFlags;
  flags.insert({"help"});
  Args args(argv, options, flags);
  if (args.has("help") || (!args.has("op") && !args.has("model"))) {
    std::cout
        << "usage: sdspeed tune --op OP (--shape NxCxHxW[,..] [--attrs K=V,..] | --shapes FILE.yaml |\n"
           "                               --model DIR [--width W --height H --batch B --component C])\n"
           "       [--storage F,..] [--weights f32,f16] [--arithmetic f32,f16] [--variant V,..] [--strategy exhaustive|random|anneal|model] [--budget N|N%]\n"
           "       [--seconds T] [--seed S] [--device P:D|NAME|all] [--sweep-dir DIR] [--db-dir DIR]\n"
           "       [--replay SWEEP.csv] [--min-ms MS] [--warmup N] [--warmup-ms MS] [--llc-mib MIB] [--threads N] [--shard K/N]\n"
           "       sdspeed tune --model DIR [--component unet,vae_decoder,text_encoder] (--total-seconds T | --total-points N) [--steps S]\n"
           "       [--context-ops once|every-step]\n"
           "       [--strategy random|...] [--seed S] [--storage F,..] [--weights ..] [--shard K/N] [--devices-dir DIR] ...\n"
           "Sweeps the op's variants x parameters on each instance: every point is built, checked against\n"
           "the reference and timed; each is appended to DIR/<device-key>/<op>.csv (default results/sweeps),\n"
           "and the best per variant goes to <db-dir>/<device-key>.yaml (default configs/tuned). A sweep\n"
           "started again skips the points it already measured. The points the database records for an\n"
           "instance are timed first, beside the budget, so a re-tune keeps them if they still win\n"
           "(not under --replay). --replay runs a strategy against a recorded sweep, without a device.\n"
           "--weights (default f32) tunes each instance once per weight format; f16-weight instances\n"
           "are keyed `...wf16` and never share entries with f32 ones.\n"
           "--arithmetic (default f32) likewise, keyed `...af16`; an arithmetic no variant computes in\n"
           "(f16 for a family without an _f16 variant) is skipped, said per instance.\n"
           "Without --op, --model tunes every family's instances of the components (default all three) under\n"
           "one budget, split by count x current time (database, else a cost model), heaviest first, then prints\n"
           "the expected gain per component. --steps and --context-ops (run's: the text context's K and V once\n"
           "per image, or every step) say how often each instance runs. --shard K/N (1-based) tunes the instances whose text hashes to\n"
           "shard K and writes <op>.shard-K-of-N.csv and <key>.shard-K-of-N.yaml (join them: sdspeed db merge).\n"
           "--device gpus runs one shard per GPU of the host in parallel processes, then merges.\n";
    return args.has("help") ? 0 : 2;
  }
  if (args.get("device") == "gpus") return tuneOnGpus(argv, args);
  if (!args.has("op")) return tuneModel(args);
  for (const char* flag : {"total-seconds", "total-points", "steps", "context-ops"})
    if (args.has(flag)) throw Error(std::string("--") + flag + " is for tune --model without --op (use --budget/--seconds)");
  const Shard shard = parseShard(args.get("shard"));
  const std::string op = args.get("op");
  const Family& fam = findFamily(op);
  std::vector<StorageFormat> formats;
  for (const auto& s : args.list("storage")) formats.push_back(StorageFormat::parse(s));
  if (formats.empty()) formats.push_back(StorageFormat{});
  formats = withArithmeticFromArgs(args, withWeightFormatsFromArgs(args, formats));
  {
    std::vector<std::string> notes;  // a family without weights, or without a quantized path
    for (const auto& f : formats) {
      const std::string note = fam.keyFormatNote(f);
      if (!note.empty() && std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
    }
    for (const auto& n : notes) std::cout << "note: " << n << "; its instances are those keys\n";
  }
  std::vector<OpInstance> instances;
  const auto listed = instancesFromArgs(args, fam, formats);
  for (const auto& inst : listed)
    if (shard.owns(inst.text())) instances.push_back(inst);
  if (shard.sharded())
    std::cout << "shard " << shard.text() << ": " << instances.size() << " of " << listed.size() << " instances\n";
  const std::string strategyName = args.get("strategy", "exhaustive");
  makeStrategy(strategyName, {}, 1, 1);  // validates the name before any work
  if (args.has("replay")) return replay(args, fam, instances);

  const TimingPolicy policy = timingPolicyFromArgs(args);
  double seconds = 0;
  if (args.has("seconds")) {
    const std::string s = args.get("seconds");
    size_t used = 0;
    try {
      seconds = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || !(seconds > 0)) throw Error("--seconds wants a positive number, got '" + s + "'");
  }
  const uint64_t seed = static_cast<uint64_t>(args.getInt("seed", 1));
  // Builds run beside the timed launches: leave a core to the host side of timing.
  const int threads = args.getInt("threads", static_cast<int>(std::max(1u, std::thread::hardware_concurrency() - 1)));
  if (threads < 1) throw Error("--threads must be at least 1");
  const std::string sweepDir = args.get("sweep-dir", "results/sweeps"), dbDir = args.get("db-dir", "configs/tuned");

  // --device all: every OpenCL device in turn; otherwise the one backend --backend and
  // --device choose (runtime/backend.h).
  std::vector<std::function<std::unique_ptr<Backend>()>> backends;
  if (args.get("device") == "all") {
    if (args.get("backend", "opencl") != "opencl") throw Error("--device all: lists OpenCL devices only");
    for (const auto& d : listDevices())
      backends.push_back([d, &args] { return std::make_unique<Context>(d, contextOptionsFromArgs(args)); });
  } else {
    backends.push_back([&args] { return backendFromArgs(args); });
  }
  if (backends.empty()) throw Error("no OpenCL device found");
  int failures = 0;
  for (const auto& makeBackend : backends) {
    std::unique_ptr<Backend> backend = makeBackend();
    Backend& ctx = *backend;
    const DeviceCaps& dev = ctx.caps();
    const std::string key = ctx.deviceKey();
    std::cout << "device " << key << ": " << dev.name << " (driver " << dev.driverVersion << ")\n";
    // Files written under the key's legacy name (before the API word) move to the new
    // name once, so resumed sweeps and the database carry on there (device_key.h).
    if (migrateKeyedPath(sweepDir, key, "")) std::cout << "moved " << sweepDir << "/" << legacyDeviceKey(key) << " to " << sweepDir << "/" << key << " (device keys name their API)\n";
    if (migrateKeyedPath(dbDir, key, ".yaml")) std::cout << "moved " << dbDir << "/" << legacyDeviceKey(key) << ".yaml to " << dbDir << "/" << key << ".yaml (device keys name their API)\n";
    SweepCache cache(shardPath(sweepDir + "/" + key + "/" + fam.name() + ".csv", shard), paramNames(fam));
    if (cache.droppedPartialRows()) std::cout << "dropped a half-written row from " << cache.path() << "\n";
    const std::string dbPath = shardPath(dbDir + "/" + key + ".yaml", shard);
    checkWritable(dbPath, "--db-dir");  // before the sweep, which may take hours
    TuningDatabase db = TuningDatabase::loadOrEmpty(dbPath, key, dev);
    // Where the recorded points come from: the database the shards are merged into (a
    // shard's own file holds only what that shard tuned; tune --device gpus runs shards).
    const std::optional<TuningDatabase> mergedDb =
        shard.sharded() ? std::optional<TuningDatabase>(TuningDatabase::loadOrEmpty(dbDir + "/" + key + ".yaml", key, dev))
                        : std::nullopt;
    const auto space = tuningSpace(fam, dev, args.list("variant"));
    // A variant this device cannot run at all for lack of a capability (fp16
    // arithmetic, sub-groups) is left out of the space: say so rather than drop it.
    const auto chosen = args.list("variant");
    for (const auto& v : fam.variants())
      if (chosen.empty() || std::find(chosen.begin(), chosen.end(), v.name) != chosen.end())
        if (std::string cap = lackedCapability(v.deviceLimitReason(v.defaults(), dev)); !cap.empty())
          std::cout << "skipped: " << fam.name() << " " << v.name << ": " << cap << "\n";
    if (space.empty()) throw Error("the " + fam.name() + " space is empty after constraints on " + dev.name);
    for (const auto& inst : instances) {
      // An arithmetic no variant computes in (f16 on OpenCL today) has nothing to tune:
      // said once per instance rather than recorded as a space of unsupported points.
      if (std::none_of(fam.variants().begin(), fam.variants().end(), [&](const VariantDef& v) {
            return std::find(v.arithmetic.begin(), v.arithmetic.end(), inst.format.arithmetic) != v.arithmetic.end();
          })) {
        std::cout << "skipped: " << inst.text() << ": no " << fam.name() << " variant computes in "
                  << dtypeName(inst.format.arithmetic) << "\n";
        continue;
      }
      // Only the variants that compute in the instance's arithmetic, as the whole-model tune.
      const std::vector<Candidate> instSpace = computingIn(space, inst.format.arithmetic);
      if (instSpace.empty()) {
        std::cout << "skipped: " << inst.text() << ": no chosen " << fam.name() << " variant computes in "
                  << dtypeName(inst.format.arithmetic) << "\n";
        continue;
      }
      const size_t budget = parseBudget(args.get("budget"), instSpace.size());
      std::cout << inst.text() << ": " << strategyName << ", " << budget << " of " << instSpace.size() << " points"
                << std::endl;
      const ProblemPtr prob = inst.problem(fam);
      DeviceEvaluator eval(ctx, fam, inst, instSpace, cache, policy, seed);
      // The points the database already records for the instance (each variant's, tuned
      // against this source or an older one) are timed first, beside the budget, as the
      // whole-model tune times the current choice: a re-tune whose few points all miss
      // the old winner would otherwise replace it with a slower entry (session 42: the
      // VAE's attention, 3.6 ms at its recorded point, re-tuned at 5 points to 9.9 ms).
      const RecordedFirst recorded = timeRecordedPoints(mergedDb ? *mergedDb : db, inst, instSpace, eval);
      // anneal and model walk from those points (the best first); proposed again, they are
      // cache hits beside the budget.
      auto strategy = makeStrategy(strategyName, instSpace, budget, seed, prob.get(), recorded.indexes);
      const size_t searchBudget = std::min(instSpace.size(), budget + strategy->knownProposals());
      // Exhaustive and random search know their order: build the budget's points ahead.
      std::vector<size_t> order = strategy->plannedOrder();
      if (order.size() > budget) order.resize(budget);
      if (!order.empty()) eval.prebuild(order, threads);
      SearchResult res = runSearch(instSpace, *strategy, searchBudget, seconds,
                                   [&](size_t i, bool& reused) { return eval(i, reused); }, progressPrinter());
      failures += res.failed + recorded.failed;
      // The instance's entry is rebuilt from everything measured for it on this device
      // with this driver and kernel source, this run or earlier.
      // Another tune (another op, or a shard) may have saved the database meanwhile:
      // reread it under a lock on the --db-dir folder so neither update is lost.
      std::filesystem::create_directories(dbDir);
      const FileLock dbLock(dbDir, "the tuning database folder", /*wait=*/true);
      db = TuningDatabase::loadOrEmpty(dbPath, key, dev);
      rebuildEntry(db, fam, inst, cache, dev, familySourceHash(ctx, fam));
      db.save(dbPath);
      std::cout << "  " << res.measured << " measured, " << res.reused << " reused from " << cache.path() << ", "
                << res.failed << " failed";
      // The recorded points apart: the counts above are the budget's, as before.
      if (const int n = recorded.measured + recorded.reused; n > 0)
        std::cout << "; " << n << " recorded point" << (n == 1 ? "" : "s") << " timed first: " << recorded.measured
                  << " measured, " << recorded.reused << " reused, " << recorded.failed << " failed";
      // The entry's best: the search's, or a recorded point's re-timed above.
      for (const auto& e : db.entries())
        if (e.instance == inst && e.sourceHash.empty() && res.measured + res.reused + recorded.measured + recorded.reused > 0) {
          const TunedVariant& b = e.variants.at(e.best);
          std::cout << "; best " << e.best << " [" << b.params << "] " << us(b.medianUs) << " median";
        }
      std::cout << "\n";
    }
    // A shard with no instance of its own still writes its (empty) database, so a merge
    // of every shard's files finds each one.
    if (instances.empty()) db.save(dbPath);
    std::cout << "database: " << dbPath << "\n";
  }
  // Failed points are recorded with their status, not fatal: report them in the exit code.
  return failures ? 3 : 0;
}

}  // namespace sdspeed
