#include <algorithm>
#include <iostream>
#include <map>

#include "runtime/device_key.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "kernels/registry.h"
#include "runtime/memory_size.h"
#include "runtime/atomic_file.h"
#include "runtime/opencl/cl_error.h"
#include "tuning/csv.h"
#include "tuning/measure.h"
#include "tuning/roofline.h"

namespace sdspeed {

int cmdBench(const std::vector<std::string>& argv) {
  auto options = kDeviceOptions;
  options.insert({"op", "shape", "attrs", "variant", "storage", "weights", "arithmetic", "params", "points", "seed", "csv",
                  "min-ms", "warmup", "warmup-ms", "llc-mib", "devices-dir", "memory-budget"});
  auto flags = kDeviceFlags;
  flags.insert({"help", "stages"});
  Args args(argv, options, flags);
  if (args.has("help") || !args.has("op") || !args.has("shape")) {
    std::cout << "usage: sdspeed bench --op OP --shape NxCxHxW[,..] [--attrs K=V,..] [--variant V,..]\n"
                 "                     [--storage F,..] [--weights f32,f16] [--arithmetic f32,f16] [--params K=V,..] [--points N|all]\n"
                 "                     [--csv FILE] [--stages]\n"
                 "                     [--min-ms MS] [--warmup N] [--warmup-ms MS] [--llc-mib MIB] [--memory-budget SIZE]\n"
                 "Times each variant (defaults + N sampled points, default 0; `all` sweeps the space)\n"
                 "with device events: median and min over repeats after warm-up (--warmup runs, then\n"
                 "runs until --warmup-ms of wall time passed and the times settled; default 1000, 20 x\n"
                 "--min-ms below 50; skipped within 0.5 s of the last timed point, the clocks being up,\n"
                 "and on CPU devices unless given), inputs rotated past the last-level cache. Every\n"
                 "timed point first passes the accuracy check. --weights (default f32) times each storage\n"
                 "format once per weight format (weight slots in f16);\n"
                 "--arithmetic (default f32) once per arithmetic (f16: unsupported on every OpenCL variant).\n"
                 "--stages: for an op of several kernels (Winograd's transforms and GEMM, split-K's reduce),\n"
                 "a line per case with each kernel's own median time, in enqueue order.\n"
                 "--memory-budget: one run's device bytes (tensors, scratch, resident derived weights; the\n"
                 "\"device MiB\" column, \"pc\": derived weights made per call) must fit: convolutions make\n"
                 "derived weights per call when resident ones do not fit and that needs fewer bytes; what\n"
                 "still does not fit is reported unsupported with its bytes.\n";
    return args.has("help") ? 0 : 2;
  }
  const std::string op = args.get("op");
  const Family& fam = findFamily(op);
  const auto attrs = attrsFromArgs(args);
  std::vector<ProblemPtr> problems;
  for (const auto& s : args.list("shape")) problems.push_back(fam.makeProblem(parseShape(s), attrs));
  std::vector<StorageFormat> formats;
  for (const auto& s : args.list("storage")) formats.push_back(StorageFormat::parse(s));
  if (formats.empty()) formats.push_back(StorageFormat{});
  formats = withArithmeticFromArgs(args, withWeightFormatsFromArgs(args, formats));
  // f16 weights are the f32 case for a family that reads no weights: time it once.
  {
    std::vector<StorageFormat> keyed;
    std::vector<std::string> notes;  // also int8/int4 on a family with no quantized path: its f16 case
    for (const auto& f : formats) {
      if (std::find(keyed.begin(), keyed.end(), fam.keyFormat(f)) == keyed.end()) keyed.push_back(fam.keyFormat(f));
      const std::string note = fam.keyFormatNote(f);
      if (!note.empty() && std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
    }
    for (const auto& n : notes) std::cout << "note: " << n << "\n";
    formats = keyed;
  }
  std::vector<const VariantDef*> variants;
  for (const auto& n : args.list("variant")) variants.push_back(&fam.variant(n));
  if (variants.empty())
    for (const auto& v : fam.variants()) variants.push_back(&v);
  if (args.has("params") && variants.size() != 1) throw Error("--params needs exactly one --variant");
  const bool all = args.get("points") == "all";
  const int extra = all ? 0 : args.getInt("points", 0);
  const TimingPolicy policy = timingPolicyFromArgs(args);
  const uint64_t seed = static_cast<uint64_t>(args.getInt("seed", 1234));
  if (args.has("csv")) checkWritable(args.get("csv"), "--csv");  // before the timing, not after it
  const uint64_t budget = args.has("memory-budget") ? parseMemorySize("--memory-budget", args.get("memory-budget")) : 0;

  std::unique_ptr<Backend> backend = backendFromArgs(args);
  Backend& ctx = *backend;
  const DeviceCaps& dev = ctx.caps();
  std::cout << "device: " << ctx.describe() << ", " << dev.computeUnits << " CUs, LLC " << (dev.globalCacheBytes >> 10)
            << " KiB\n";
  Ceilings ceil;
  const std::string ceilPath = resolveKeyedPath(args.get("devices-dir", "configs/devices"), ctx.deviceKey(), ".yaml");
  const bool haveCeil = loadCeilings(ceilPath, ceil) && ceil.copyGBs > 0;
  if (haveCeil)
    std::cout << "ceilings (" << ceilPath << "): copy " << fmtFixed(ceil.copyGBs, 1) << " GB/s, fma "
              << fmtFixed(ceil.fmaGflops, 1) << " GFLOP/s\n";
  else
    std::cout << "no ceilings for this device (run `sdspeed roofline`): % of copy bandwidth not shown\n";
  auto pct = [&](double gbs) { return haveCeil ? fmtFixed(100.0 * gbs / ceil.copyGBs, 1) + "%" : std::string("-"); };
  TextTable table({"problem", "variant", "params", "storage", "median us", "min us", "GB/s", "% copy", "rot",
                    "device MiB", "status"});
  std::string csv = csvRow({"device", "driver", "problem", "variant", "params", "storage", "status",
                            "median_us", "min_us", "max_us", "repeats", "rotations", "gb_per_s", "message",
                            "footprint_bytes", "derived_weights"});
  auto deviceMib = [](const Measurement& m) {
    return m.footprintBytes ? fmtFixed(static_cast<double>(m.footprintBytes) / (1 << 20), 1) + (m.derivedPerCall ? " pc" : "")
                            : std::string("-");
  };
  struct Best { double us = 0; std::string what; };
  std::vector<std::string> failures;
  std::vector<std::string> stageLines;  // --stages: one line per measured case of several kernels
  std::map<std::string, Best> best;  // per problem + storage
  for (const auto& prob : problems)
    for (const VariantDef* v : variants) {
      std::vector<ParamPoint> points;
      if (args.has("params")) points = {v->parsePoint(args.get("params"))};
      else if (all) points = v->space();
      else points = samplePoints(*v, dev, extra, seed, prob.get());
      if (points.empty() && prob == problems.front()) {  // a device rule refuses every point: say so, once
        const std::string why = v->deviceLimitReason(v->defaults(), dev);
        std::cout << "skipped: " << fam.name() << " " << v->name << ": "
                  << (why.empty() ? "no parameter point this device can run" : why) << "\n";
      }
      for (const auto& p : points)
        for (const auto& f : formats) {
          Measurement m = measureCase(ctx, fam, *v, p, *prob, f, policy, seed, budget);
          const bool ok = m.check.status == Status::Ok;
          const bool failed = !ok && m.check.status != Status::Unsupported;
          if (failed) failures.push_back(prob->text() + " " + v->name + " [" + p.text() + "] " + f.name() + ": " +
                                         statusName(m.check.status) + ": " + m.check.message);
          std::string status = statusName(m.check.status);
          if (ok && m.timing.fitsInCache) status += " (working set fits in cache)";
          // The times still moved after 2 x --warmup-ms (runtime/timing.h): a clock or a
          // neighbour changing under the measurement; the figure is less certain.
          if (ok && !m.timing.warmupSettled) status += " (warm-up unsettled)";
          // Failures and refusals (a budget's included) say why, on one line.
          if (!ok && !m.check.message.empty()) status += ": " + m.check.message.substr(0, m.check.message.find('\n'));
          table.add({prob->text(), v->name, p.text(), f.name(), ok ? fmtFixed(m.timing.medianMs * 1e3, 2) : "-",
                     ok ? fmtFixed(m.timing.minMs * 1e3, 2) : "-", ok ? fmtFixed(m.gbPerSec(), 1) : "-",
                     ok ? pct(m.gbPerSec()) : "-", ok ? std::to_string(m.timing.rotations) : "-", deviceMib(m), status});
          csv += csvRow({dev.name, dev.driverVersion, prob->text(), v->name, p.text(), f.name(),
                         statusName(m.check.status), ok ? fmtFixed(m.timing.medianMs * 1e3, 3) : "",
                         ok ? fmtFixed(m.timing.minMs * 1e3, 3) : "", ok ? fmtFixed(m.timing.maxMs * 1e3, 3) : "",
                         ok ? std::to_string(m.timing.repeats) : "", ok ? std::to_string(m.timing.rotations) : "",
                         ok ? fmtFixed(m.gbPerSec(), 2) : "", m.check.message,
                         m.footprintBytes ? std::to_string(m.footprintBytes) : "",
                         m.footprintBytes ? (m.derivedPerCall ? "per-call" : "resident") : ""});
          if (ok && args.has("stages") && !m.timing.stageMedianMs.empty()) {
            std::string line = "stages: " + prob->text() + " " + v->name + " [" + p.text() + "] " + f.name() + ":";
            for (size_t i = 0; i < m.timing.stageMedianMs.size(); ++i)
              line += (i ? " + " : " ") + fmtFixed(m.timing.stageMedianMs[i] * 1e3, 2);
            stageLines.push_back(line + " us (" + std::to_string(m.timing.stageMedianMs.size()) +
                                 " kernels, each one's median, in enqueue order)");
          }
          if (ok) {
            Best& b = best[prob->text() + " " + f.name()];
            if (b.what.empty() || m.timing.medianMs * 1e3 < b.us)
              b = {m.timing.medianMs * 1e3, v->name + " [" + p.text() + "] min " + fmtFixed(m.timing.minMs * 1e3, 2) +
                                                " us, " + fmtFixed(m.gbPerSec(), 1) + " GB/s"};
          }
        }
    }
  table.print(std::cout);
  for (const auto& l : stageLines) std::cout << l << "\n";
  for (const auto& [k, b] : best) std::cout << "best: " << k << ": " << fmtFixed(b.us, 2) << " us median, " << b.what << "\n";
  if (args.has("csv")) writeFileAtomically(args.get("csv"), csv);
  for (const auto& f : failures) std::cout << "FAILED: " << f << "\n";
  // A configuration that fails to build, run or pass the check is an error of the run.
  return failures.empty() ? 0 : 1;
}

}  // namespace sdspeed
