// sdspeed-bench: every (op instance, variant) of a shape set as a Google Benchmark
// benchmark on one OpenCL device, named family/variant/<instance> (the op-instance
// text form of tuning/op_instance.h without its leading family word), with the
// variant's tuned parameters (configs/tuned/<device-key>.yaml through the database
// lookup and its fallbacks) or its defaults, labelled params=tuned|default.
//
// Each benchmark first passes the accuracy check (tuning/measure.h TimedCase, the
// same gate as `sdspeed bench` and the tuner); a configuration that fails is skipped
// with SkipWithError("<status>: <message>"). Timing is runtime/timing.h's timeOp
// (first kernel start to last kernel end, batched, inputs rotated past 2x the LLC):
// each Google Benchmark iteration is one op run, and its time (SetIterationTime,
// UseManualTime) is that run's sample from a timeOp batch. Counters: bytes/s and
// FLOP/s (Family::minBytes, Family::minFlops) as rates over the manual time, their
// fractions of the device's ceilings (configs/devices/<key>.yaml) and the median and
// minimum of the run's samples in microseconds (sdspeed's own statistics).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <vector>
#include <set>

#include "runtime/device_key.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "kernels/registry.h"
#include "runtime/opencl/cl_error.h"
#include "tuning/database.h"
#include "tuning/measure.h"
#include "tuning/op_instance.h"
#include "tuning/roofline.h"
#include "tuning/shape_set.h"
#include "tuning/tuner.h"

namespace sdspeed {
namespace {

const char* kUsage =
    "usage: sdspeed-bench [--device P:D|NAME] [--shapes FILE] [--instances FILE] [--op OP,..] [--variant V,..]\n"
    "                     [--storage F,..] [--tuned-dir DIR] [--devices-dir DIR] [--llc-mib MIB]\n"
    "                     [--warmup N] [--warmup-ms MS] [--batch-ms MS] [--seed N] [--list-instances]\n"
    "                     [--kernel-dir DIR] [--cache-dir DIR] [--no-disk-cache] [--benchmark_...]\n"
    "\n"
    "One Google Benchmark per (op instance, variant) of a shape set on one OpenCL device,\n"
    "named family/variant/<instance> (tuning/op_instance.h text form without the family\n"
    "word), each at its tuned parameters (label params=tuned) or its defaults\n"
    "(params=default), behind the accuracy check (a failing one is skipped with\n"
    "'<status>: <message>'; an unsupported one with 'unsupported: ...').\n"
    "\n"
    "  --device P:D|NAME  the OpenCL device (default: the first GPU, else the first device)\n"
    "  --shapes FILE      shape set (default configs/shapes/sd15-512.yaml unless --instances)\n"
    "  --instances FILE   op instance texts, one per line (# comments), after the shape set's;\n"
    "                     their storage format is used as given, --storage applies to --shapes\n"
    "  --op OP,..         only these families; --variant V,.. only these variants\n"
    "  --storage F,..     storage formats (default f32.buffer.nchw), e.g. f16.image2d.nc4hw4\n"
    "  --tuned-dir DIR    tuning databases (default configs/tuned)\n"
    "  --devices-dir DIR  device ceilings (default configs/devices)\n"
    "  --llc-mib MIB      last-level cache size to rotate inputs past (default: the driver's)\n"
    "  --warmup N         runs before each timed invocation (default 3)\n"
    "  --warmup-ms MS     then runs until MS of wall time passed and the times settled\n"
    "                     (clocks ramp up after idle; default 1000; GPUs only unless given)\n"
    "  --batch-ms MS      device time per timeOp batch that feeds the iterations (default 5)\n"
    "  --list-instances   print the selected op instances, one per line, and exit\n"
    "Options are ours unless they start with --benchmark_ (Google Benchmark's: e.g.\n"
    "--benchmark_filter=REGEX --benchmark_min_time=0.5 --benchmark_repetitions=N\n"
    "--benchmark_out=results/bench/FILE.json --benchmark_out_format=json|csv).\n"
    "Counters: bytes_per_second, flop_per_second (rates over the mean iteration time),\n"
    "copy_fraction, fma_fraction (those rates over the ceilings, when the device has them),\n"
    "median_us, min_us (of the samples of the reported run), bytes, flops (per op),\n"
    "rotations (input copies) and fits_in_cache (1: the rotated set still fits in 2x LLC).\n"
    "Exit status 1 when any configuration failed its check or a run.\n";

struct Globals {
  Backend* ctx = nullptr;
  TimingPolicy policy;
  double batchMs = 5;
  uint64_t seed = 1234;
  Ceilings ceil;
  bool haveCeil = false;
  int failures = 0;
};

Globals& globals() {
  static Globals g;
  return g;
}
std::unique_ptr<Backend>& backend() {
  static std::unique_ptr<Backend> ctx;
  return ctx;
}
struct Case;
// Every case made (the registered benchmarks' lambdas hold them too).
std::vector<std::shared_ptr<Case>>& allCases() {
  static std::vector<std::shared_ptr<Case>> cases;
  return cases;
}
void releaseBackend();

struct Case {
  const Family* fam = nullptr;
  const VariantDef* variant = nullptr;
  ParamPoint point;
  ProblemPtr problem;
  StorageFormat format;
  std::string label;
  std::unique_ptr<TimedCase> timed;  // created (the check run) on the first invocation
  bool reported = false;
};

// The cases' device buffers go first, then the backend. Not through Google Benchmark's
// registry: it is a static made after this handler was registered, so it is already
// destroyed when the handler runs.
void releaseBackend() {
  for (auto& c : allCases()) c->timed.reset();
  globals().ctx = nullptr;
  backend().reset();
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

void skip(benchmark::State& state, Case& c, Globals& g) {
  const CheckResult& r = c.timed->check();
  const bool unsupported = r.status == Status::Unsupported;
  const std::string why = std::string(unsupported ? "unsupported" : statusName(r.status)) + ": " + firstLine(r.message);
  if (!unsupported && !c.reported) {
    ++g.failures;
    c.reported = true;
    std::cerr << "sdspeed-bench: " << c.fam->name() << "/" << c.variant->name << " [" << c.point.text() << "] "
              << c.problem->text() << " " << c.format.name() << ": " << statusName(r.status) << ": " << r.message
              << "\n";
  }
  state.SkipWithError(why.c_str());
}

void runCase(benchmark::State& state, Case& c, Globals& g) {
  if (!c.timed)
    c.timed = std::make_unique<TimedCase>(*g.ctx, *c.fam, *c.variant, c.point, *c.problem, c.format, g.policy, g.seed);
  if (!c.timed->ok()) return skip(state, c, g);
  state.SetLabel(c.label);
  // Each iteration consumes one sample of a timeOp batch (runtime/timing.h); a batch
  // runs whenever the samples are used up, the first one after the warm-up.
  TimingPolicy batch = g.policy;
  batch.minRepeats = 10;
  batch.maxRepeats = 256;
  batch.minTotalMs = g.batchMs;
  std::deque<double> pending;
  std::vector<double> used;
  bool first = true;
  try {
    for (auto _ : state) {
      if (pending.empty()) {
        batch.warmup = first ? g.policy.warmup : 0;
        batch.warmupMs = first ? g.policy.warmupMs : 0;
        first = false;
        const TimingStats s = c.timed->time(batch);
        pending.assign(s.samplesMs.begin(), s.samplesMs.end());
      }
      const double ms = pending.front();
      pending.pop_front();
      used.push_back(ms);
      state.SetIterationTime(std::max(ms, 1e-6) * 1e-3);
    }
  } catch (const Error&) {
    return skip(state, c, g);  // a launch failed mid-run: check() is run_failed
  }
  if (!c.timed->verify()) return skip(state, c, g);
  const TimingStats s = summarize(used);
  const double iters = static_cast<double>(state.iterations());
  const double bytes = static_cast<double>(c.timed->bytes());
  const double flops = c.fam->minFlops(*c.problem);
  using benchmark::Counter;
  state.counters["bytes_per_second"] = Counter(bytes * iters, Counter::kIsRate);
  state.counters["bytes"] = Counter(bytes);
  state.counters["median_us"] = Counter(s.medianMs * 1e3);
  state.counters["min_us"] = Counter(s.minMs * 1e3);
  state.counters["rotations"] = Counter(c.timed->rotations());
  if (flops > 0) {
    state.counters["flop_per_second"] = Counter(flops * iters, Counter::kIsRate);
    state.counters["flops"] = Counter(flops);
  }
  state.counters["fits_in_cache"] = Counter(c.timed->fitsInCache() ? 1 : 0);
  // Fractions of the ceilings over the same (mean iteration) time as the rates above.
  double seconds = 0;
  for (double ms : used) seconds += std::max(ms, 1e-6) * 1e-3;
  if (g.haveCeil && g.ceil.copyGBs > 0 && seconds > 0)
    state.counters["copy_fraction"] = Counter(bytes * iters / seconds / (g.ceil.copyGBs * 1e9));
  if (g.haveCeil && g.ceil.fmaGflops > 0 && flops > 0 && seconds > 0)
    state.counters["fma_fraction"] = Counter(flops * iters / seconds / (g.ceil.fmaGflops * 1e9));
}

int run(int argc, char** argv) {
  // Google Benchmark's flags (--benchmark_*, --v) go to benchmark::Initialize, the
  // rest are ours.
  std::vector<std::string> ours;
  std::vector<char*> theirs = {argv[0]};
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--benchmark_", 0) == 0 || a == "--v" || a.rfind("--v=", 0) == 0) theirs.push_back(argv[i]);
    else if (a == "--help" || a == "-h") help = true;
    else ours.push_back(a);
  }
  if (help) {
    std::cout << kUsage << "\nGoogle Benchmark's own options:\n";
    static char helpFlag[] = "--help";
    theirs.push_back(helpFlag);  // Initialize prints them and exits
  }
  int theirArgc = static_cast<int>(theirs.size());
  benchmark::Initialize(&theirArgc, theirs.data());
  if (benchmark::ReportUnrecognizedArguments(theirArgc, theirs.data())) return 2;

  auto options = kDeviceOptions;
  options.insert({"shapes", "instances", "op", "variant", "storage", "tuned-dir", "devices-dir", "llc-mib", "warmup", "warmup-ms", "batch-ms",
                  "seed"});
  auto flags = kDeviceFlags;
  flags.insert("list-instances");
  Args args(ours, options, flags);

  // The selection: families, variants, formats, and the shape set's op instances.
  std::set<std::string> ops, variantNames;
  for (const auto& o : args.list("op")) ops.insert(findFamily(o).name());
  for (const auto& v : args.list("variant")) variantNames.insert(v);
  std::vector<StorageFormat> formats;
  for (const auto& s : args.list("storage")) formats.push_back(StorageFormat::parse(s));
  if (formats.empty()) formats.push_back(StorageFormat{});
  const std::string shapesPath =
      args.get("shapes", args.has("instances") ? "" : "configs/shapes/sd15-512.yaml");
  struct Selected {
    const Family* fam;
    ProblemPtr problem;
    StorageFormat format;
    OpInstance instance;
  };
  std::vector<Selected> selected;
  std::set<std::string> seen;
  if (!shapesPath.empty())
    for (const auto& e : loadShapeSet(shapesPath)) {
      if (!ops.empty() && !ops.count(e.op)) continue;
      const Family& fam = findFamily(e.op);
      ProblemPtr prob = fam.makeProblem(e.shape, e.attrs);
      for (const auto& f : formats) {
        OpInstance inst = OpInstance::of(fam, *prob, f);
        if (seen.insert(inst.text()).second) selected.push_back({&fam, prob, f, inst});
      }
    }
  if (args.has("instances")) {
    std::ifstream in(args.get("instances"));
    if (!in) throw Error("cannot read " + args.get("instances"));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
      try {
        const OpInstance parsed = OpInstance::parse(line);
        if (!ops.empty() && !ops.count(parsed.family)) continue;
        const Family& fam = findFamily(parsed.family);
        ProblemPtr prob = parsed.problem(fam);
        OpInstance inst = OpInstance::of(fam, *prob, parsed.format);  // canonical text
        if (seen.insert(inst.text()).second) selected.push_back({&fam, prob, parsed.format, inst});
      } catch (const Error& e) {
        throw Error(args.get("instances") + ":" + std::to_string(n) + ": " + e.what());
      }
    }
  }
  for (const auto& v : variantNames) {
    bool known = false;
    for (const auto& s : selected)
      for (const auto& d : s.fam->variants()) known = known || d.name == v;
    if (!known) throw Error("no selected op has a variant '" + v + "'");
  }
  if (selected.empty()) throw Error("no op instances selected");
  if (args.has("list-instances")) {
    for (const auto& s : selected) std::cout << s.instance.text() << "\n";
    return 0;
  }

  Globals& g = globals();
  g.policy = timingPolicyFromArgs(args);
  g.seed = static_cast<uint64_t>(args.getInt("seed", 1234));
  g.batchMs = args.getInt("batch-ms", 5);
  if (g.batchMs <= 0) throw Error("--batch-ms must be positive");
  std::unique_ptr<Backend>& ctx = backend();
  allCases();  // constructed before the handler below is registered, so destroyed after it runs
  ctx = backendFromArgs(args);  // --backend opencl|vulkan, as every verb takes it
  g.ctx = ctx.get();
  // Released at exit by a handler registered after the driver was loaded, so it runs
  // before the driver's own teardown on every way out: return, an exception caught in
  // main, Google Benchmark's std::exit. In static destruction, vkDestroyDevice after
  // NVIDIA's Vulkan ICD had torn itself down crashed (exit 139 on an H100).
  std::atexit(releaseBackend);
  const DeviceCaps& dev = ctx->caps();
  const std::string key = ctx->deviceKey();
  const std::string ceilPath = resolveKeyedPath(args.get("devices-dir", "configs/devices"), key, ".yaml");
  g.haveCeil = loadCeilings(ceilPath, g.ceil);
  const std::string dbPath = resolveKeyedPath(args.get("tuned-dir", "configs/tuned"), key, ".yaml");
  const TuningDatabase db = TuningDatabase::loadOrEmpty(dbPath, key, dev);

  benchmark::AddCustomContext("device_name", dev.name);
  benchmark::AddCustomContext("device_key", key);
  // OpenCL's "platform:device" index (Vulkan devices are named by --device vulkan:N).
  if (const auto* cl = dynamic_cast<const Context*>(ctx.get())) benchmark::AddCustomContext("device_index", cl->device().index());
  benchmark::AddCustomContext("driver", dev.driverVersion);
  benchmark::AddCustomContext(dev.api == "opencl" ? "opencl_version" : "api_version", ctx->apiVersion());
  benchmark::AddCustomContext("sdspeed_commit", sdspeedCommit());
  benchmark::AddCustomContext("shapes", shapesPath);
  benchmark::AddCustomContext("tuned_db", dbPath + (db.entries().empty() ? " (no entries)" : ""));
  benchmark::AddCustomContext("llc_bytes", std::to_string(g.policy.cacheBytes(dev)));
  benchmark::AddCustomContext("ceilings", g.haveCeil ? ceilPath : "none");
  if (g.haveCeil) {
    benchmark::AddCustomContext("copy_gb_per_s", std::to_string(g.ceil.copyGBs));
    benchmark::AddCustomContext("fma_gflop_per_s", std::to_string(g.ceil.fmaGflops));
  }
  std::set<std::string> hashed;
  for (const auto& s : selected)
    if (hashed.insert(s.fam->name()).second)
      benchmark::AddCustomContext("source_hash_" + s.fam->name(), familySourceHash(*ctx, *s.fam));

  for (const auto& s : selected)
    for (const auto& v : s.fam->variants()) {
      if (!variantNames.empty() && !variantNames.count(v.name)) continue;
      // A variant computing in another arithmetic than the shape's format (the half twins
      // under f32 arithmetic) has no case here: its instance is the .af16 one.
      if (std::find(v.arithmetic.begin(), v.arithmetic.end(), s.format.arithmetic) == v.arithmetic.end()) continue;
      auto c = std::make_shared<Case>();
      allCases().push_back(c);
      c->fam = s.fam;
      c->variant = &v;
      c->problem = s.problem;
      c->format = s.format;
      const TunedChoice choice = db.lookup(*s.fam, s.instance, v.name);
      const bool tuned = choice.tuned();
      std::string note;
      try {
        c->point = v.parsePoint(choice.params);
      } catch (const Error& e) {
        c->point = genericDefault(*s.fam, v, s.instance);  // the defaults fitted to the instance
        note = " (tuned '" + choice.params + "' rejected: " + e.what() + ")";
      }
      c->label = std::string("params=") + (tuned && note.empty() ? "tuned" : "default") + " " + c->point.text() +
                 (tuned ? " source=" + choice.source : "") + note;
      std::string rest = s.instance.text().substr(s.fam->name().size() + 1);
      const std::string name = lower(s.fam->name() + "/" + v.name + "/" + rest);
      benchmark::RegisterBenchmark(name.c_str(), [c](benchmark::State& state) { runCase(state, *c, globals()); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return g.failures ? 1 : 0;
}

}  // namespace
}  // namespace sdspeed

int main(int argc, char** argv) {
  try {
    return sdspeed::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "sdspeed-bench: error: " << e.what() << "\n";
    return 1;
  }
}
