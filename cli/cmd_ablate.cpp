// sdspeed ablate: the paper's cumulative ablation on any device (pipeline/run/
// ablation.h), as a Markdown table, CSV, JSON and a gnuplot chart; --merge puts the
// tables of several devices side by side.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/run_inputs.h"
#include "pipeline/run/ablation.h"
#include "pipeline/run/sd_runner.h"
#include "runtime/atomic_file.h"
#include "runtime/opencl/cl_error.h"
#include "runtime/timing.h"
#include "tuning/tuner.h"

namespace sdspeed {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string fmt(double v, int digits = 2) {
  if (std::isinf(v)) return "inf";
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(digits);
  o << v;
  return o.str();
}

std::string sci(double v) {
  std::ostringstream o;
  o.precision(2);
  o << std::scientific << v;
  return o.str();
}

double mib(uint64_t b) { return static_cast<double>(b) / (1 << 20); }

std::string variantsText(const std::map<std::string, int>& v) {
  std::string s;
  for (const auto& [k, n] : v) s += (s.empty() ? "" : ", ") + k + " x" + std::to_string(n);
  return s;
}

// Sums a component's memory and tallies its variants into the row (from its stats:
// a released component's are kept).
void addComponent(const ComponentStats& st, AblationMeasurement& m) {
  m.activationBytes += st.memory.activationBytes;
  m.scratchBytes += st.memory.scratchBytes;
  m.weightBytes += st.memory.weightBytes;
  m.streamedBytes += st.memory.streamedBytes;
  for (const auto& c : st.memory.budgetChoices) m.budgetChoices.push_back(st.name + ": " + c);
  for (size_t i = 0; i < st.choices.size(); ++i) {
    ++m.variants[st.families[i] + "/" + st.choices[i].variant];
    m.fallbacks += st.choices[i].source.find("fallback") != std::string::npos;
  }
}

// The run's options with the row's keys applied.
ExecOptions rowExec(const RunSetup& setup, const AblationRow& row, const std::string& layout) {
  ExecOptions exec = setup.exec;
  exec.format = StorageFormat::parse(row.precision + ".buffer." + layout);
  exec.format.weights = setup.exec.format.weights;  // the run's --weights unless the row names its own
  if (!row.weights.empty()) parseWeightsSpec(row.weights, "ablation row " + row.name + ": weights", exec);
  exec.format.arithmetic = row.arithmetic.empty()
                               ? setup.exec.format.arithmetic
                               : runArithmetic(row.arithmetic, "ablation row " + row.name + ": arithmetic");
  return exec;
}

// keepResident: the command's --keep-resident, for rows without a release key.
AblationMeasurement runRow(Backend& ctx, const RunSetup& setup, const AblationRow& row, const std::string& layout,
                           bool keepResident, const std::vector<float>* baseline, std::vector<float>& decoded) {
  ExecOptions exec = rowExec(setup, row, layout);
  exec.planner = row.planner;
  exec.variants = row.variants;
  exec.fuseActivations = row.fused;
  if (row.planScratch) exec.planScratch = *row.planScratch;
  if (row.derivedPerCall) exec.derivedWeightsPerCall = *row.derivedPerCall;
  if (row.budget) exec.memoryBudget = *row.budget;
  if (row.reuseContextOps) exec.reuseSteadyOps = *row.reuseContextOps;
  AblationMeasurement m;
  m.row = row;
  m.released = row.release.value_or(!keepResident);
  m.planScratch = exec.planScratch;
  m.derivedPerCall = exec.derivedWeightsPerCall;
  m.budgetBytes = exec.memoryBudget;
  m.reuseContextOps = exec.reuseSteadyOps;
  if (exec.memoryBudget && !m.released)
    throw Error("ablation row " + row.name + ": a budget holds one component at a time: it needs release: true");
  m.weights = weightsSpecText(exec);
  m.arithmetic = dtypeName(exec.format.arithmetic);
  m.backend = ctx.api();
  ctx.resetPeak();
  {
    SdPipeline pipe(ctx, setup.src, exec, setup.latentH, setup.latentW, setup.batch);
    auto sched = loadScheduler(setup.schedulerName, setup.schedulerPath);
    DiffusionRequest req;
    req.steps = setup.steps;
    req.guidance = setup.cfg;
    req.condIds = setup.condIds;
    req.uncondIds = setup.uncondIds;
    req.initLatents = setup.initLatents;
    req.keepResident = !m.released;  // each component warms up before its timed run either way
    req.warmUpMinMs = defaultWarmUpMs(ctx.caps());  // as `run`'s: rows compare at the clocks under load
    const DiffusionResult r = runDiffusion(pipe, *sched, req);
    const TimingStats unet = summarize(r.unetMs);  // steps >= 1: never empty
    m.unetMedianMs = unet.medianMs;
    m.unetMinMs = unet.minMs;
    m.pipelineMs = r.textMs + r.vaeMs;
    for (double u : r.unetMs) m.pipelineMs += u;
    m.wallMs = r.totalMs;
    for (const char* c : {"text_encoder", "unet", "vae_decoder"}) addComponent(pipe.stats(c), m);
    decoded = r.decoded;
  }
  m.peakBytes = ctx.memoryStats().peakBytes;
  if (baseline) {
    for (size_t i = 0; i < decoded.size(); ++i) {
      // A NaN or infinite pixel makes the row's deviation infinite (std::max would drop NaN).
      const double d = std::abs(static_cast<double>(decoded[i]) - (*baseline)[i]);
      if (!(d <= m.maxAbs)) m.maxAbs = std::isfinite(d) ? d : std::numeric_limits<double>::infinity();
    }
    m.psnrDb = psnrDb(decoded, *baseline);
  } else {
    m.psnrDb = std::numeric_limits<double>::infinity();
  }
  m.withinTolerance = std::isfinite(m.maxAbs) && m.maxAbs <= row.maxAbs;
  return m;
}

json rowJson(const AblationMeasurement& m) {
  return {{"row", m.row.name},
          {"fused", m.row.fused},
          {"planner", m.row.planner},
          {"precision", m.row.precision},
          {"weights", m.weights},
          {"arithmetic", m.arithmetic},
          {"backend", m.backend},
          {"allowed", m.row.variants},
          {"unet_ms_median", m.unetMedianMs},
          {"unet_ms_min", m.unetMinMs},
          {"pipeline_ms", m.pipelineMs},
          {"wall_ms", m.wallMs},
          {"activation_bytes", m.activationBytes},
          {"scratch_bytes", m.scratchBytes},
          {"weight_bytes", m.weightBytes},
          {"peak_bytes", m.peakBytes},
          {"components_released", m.released},
          {"scratch", m.planScratch ? "planned" : "own"},
          {"derived_weights", m.derivedPerCall ? "per-call" : "resident"},
          {"budget_bytes", m.budgetBytes},
          {"context_ops", m.reuseContextOps ? "once" : "every-step"},
          {"streamed_bytes_per_run", m.streamedBytes},
          {"budget_choices", m.budgetChoices},
          {"max_abs_vs_baseline", std::isfinite(m.maxAbs) ? json(m.maxAbs) : json("inf")},
          {"psnr_db_vs_baseline", std::isinf(m.psnrDb) ? json("inf") : json(m.psnrDb)},
          {"tolerance_max_abs", m.row.maxAbs},
          {"within_tolerance", m.withinTolerance},
          {"variants_run", m.variants},
          {"fallbacks", m.fallbacks}};
}

std::string markdown(const json& j) {
  std::ostringstream o;
  o << "# Ablation `" << j["plan"].get<std::string>() << "` on " << j["device"].get<std::string>() << "\n\n";
  o << "Command: `" << j["command"].get<std::string>() << "`  \n";
  o << "Model: " << j["model"].get<std::string>() << "; " << j["run"].get<std::string>() << "; sdspeed "
    << j["commit"].get<std::string>() << ". Times are device time (OpenCL events or Vulkan timestamp queries); UNet = median per iteration "
    << "over the steps; pipeline = text encoder + all UNet steps + VAE decoder. Memory: planned (or, without "
       "planner, allocated) activations of all three components; peak = every allocation sdspeed made during the row.\n\n";
  o << "| row | UNet ms/iter | vs previous | vs baseline | pipeline ms | activations MiB | scratch MiB | peak MiB | "
       "max abs vs baseline | PSNR dB | within tolerance |\n";
  o << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  const auto& rows = j["rows"];
  // Skipped rows in their place in the config (`index`), between the measured ones.
  const json skipped = j.value("skipped_rows", json::array());
  size_t next = 0;
  auto skippedUpTo = [&](size_t measured) {  // those before the measured row `measured`
    for (; next < skipped.size() && skipped[next].value("index", size_t{0}) <= measured + next; ++next)
      o << "| " << skipped[next]["row"].get<std::string>() << " | skipped: " << skipped[next]["reason"].get<std::string>()
        << " | | | | | | | | | |\n";
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    skippedUpTo(i);
    const auto& r = rows[i];
    const double ms = r["unet_ms_median"].get<double>();
    const double prev = i ? rows[i - 1]["unet_ms_median"].get<double>() : ms;
    const double base = rows[0]["unet_ms_median"].get<double>();
    const std::string psnr = r["psnr_db_vs_baseline"].is_string() ? "inf" : fmt(r["psnr_db_vs_baseline"].get<double>(), 1);
    o << "| " << r["row"].get<std::string>() << " | " << fmt(ms) << " | " << fmt(prev / ms) << "x | " << fmt(base / ms)
      << "x | " << fmt(r["pipeline_ms"].get<double>(), 1) << " | " << fmt(mib(r["activation_bytes"].get<uint64_t>()), 1)
      << " | " << fmt(mib(r["scratch_bytes"].get<uint64_t>()), 1) << " | " << fmt(mib(r["peak_bytes"].get<uint64_t>()), 1)
      << " | " << (r["max_abs_vs_baseline"].is_string() ? std::string("inf") : sci(r["max_abs_vs_baseline"].get<double>()))
      << " | " << psnr << " | "
      << (r["within_tolerance"].get<bool>() ? "yes" : "**no**") << " (<= " << sci(r["tolerance_max_abs"].get<double>())
      << ") |\n";
  }
  for (; next < skipped.size(); ++next)  // after the last measured row
    o << "| " << skipped[next]["row"].get<std::string>() << " | skipped: " << skipped[next]["reason"].get<std::string>()
      << " | | | | | | | | | |\n";
  o << "\nVariants each row ran (op counts over the text encoder, UNet and VAE decoder):\n\n";
  for (const auto& r : rows) {
    std::string v;
    for (const auto& [k, n] : r["variants_run"].items()) v += (v.empty() ? "" : ", ") + k + " x" + std::to_string(n.get<int>());
    const int fb = r.value("fallbacks", 0);
    const bool released = r.value("components_released", false);
    std::string forced;
    for (const auto& c : r.value("budget_choices", json::array())) forced += "; budget: " + c.get<std::string>();
    o << "- " << r["row"].get<std::string>() << (released ? " (components released)" : "") << " [weights "
      << r.value("weights", std::string("f32")) << ", arithmetic " << r.value("arithmetic", std::string("f32"))
      << ", scratch " << r.value("scratch", std::string("planned"))
      << ", derived weights " << r.value("derived_weights", std::string("resident"))
      << ", context ops " << r.value("context_ops", std::string("every-step")) << forced << "]: " << v
      << (fb ? " (" + std::to_string(fb) + " ops outside the row's variants: none allowed could run them)" : "") << "\n";
  }
  return o.str();
}

std::string csv(const json& j) {
  std::ostringstream o;
  o << "row,unet_ms_median,unet_ms_min,pipeline_ms,activation_bytes,scratch_bytes,peak_bytes,max_abs_vs_baseline,"
       "psnr_db_vs_baseline,within_tolerance,variants_run\n";
  for (const auto& r : j["rows"]) {
    std::string v;
    for (const auto& [k, n] : r["variants_run"].items()) v += (v.empty() ? "" : " ") + k + "=" + std::to_string(n.get<int>());
    o << '"' << r["row"].get<std::string>() << "\"," << r["unet_ms_median"].get<double>() << ","
      << r["unet_ms_min"].get<double>() << "," << r["pipeline_ms"].get<double>() << ","
      << r["activation_bytes"].get<uint64_t>() << "," << r["scratch_bytes"].get<uint64_t>() << ","
      << r["peak_bytes"].get<uint64_t>() << ","
      << (r["max_abs_vs_baseline"].is_string() ? std::string("inf") : std::to_string(r["max_abs_vs_baseline"].get<double>()))
      << ","
      << (r["psnr_db_vs_baseline"].is_string() ? "inf" : std::to_string(r["psnr_db_vs_baseline"].get<double>())) << ","
      << (r["within_tolerance"].get<bool>() ? 1 : 0) << ",\"" << v << "\"\n";
  }
  return o.str();
}

// Bars of UNet ms per row, planned activation memory on the second axis; SVG and PNG
// when gnuplot is installed (Debian gnuplot-nox), else a note.
void plot(const json& j, const std::string& dir) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::cout << "gnuplot not found (apt-get install gnuplot-nox): no plot\n";
    return;
  }
  std::ofstream d(dir + "/ablation.dat");
  int i = 0;
  for (const auto& r : j["rows"])
    d << i++ << " \"" << r["row"].get<std::string>() << "\" " << r["unet_ms_median"].get<double>() << " "
      << mib(r["activation_bytes"].get<uint64_t>()) << "\n";
  d.close();
  std::ofstream g(dir + "/ablation.gp");
  for (const auto& [term, ext] : {std::pair<std::string, std::string>{"svg size 1000,600 dynamic font 'sans,11'", "svg"},
                                  {"pngcairo size 1000,600 font 'sans,10'", "png"}}) {
    g << "set terminal " << term << "\nset output '" << dir << "/ablation." << ext << "'\n"
      << "set title \"Ablation " << j["plan"].get<std::string>() << " on " << j["device"].get<std::string>()
      << "\" noenhanced\nset style fill solid 0.6 border -1\nset boxwidth 0.6\nset grid ytics\n"
      << "set ylabel 'UNet ms per iteration (median)'\nset y2label 'planned activations (MiB)'\n"
      << "set ytics nomirror\nset y2tics\nset yrange [0:*]\nset y2range [0:*]\nset xtics rotate by -25 noenhanced\n"
      << "set key top right\nplot '" << dir << "/ablation.dat' using 1:3:xtic(2) with boxes title 'UNet ms/iter', "
      << "'' using 1:4 axes x1y2 with linespoints lw 2 pt 7 title 'activations MiB'\n";
  }
  g.close();
  if (std::system(("gnuplot '" + dir + "/ablation.gp'").c_str()) != 0) std::cout << "gnuplot failed: no plot\n";
}

// DIR/ablation.json, checked for what the table, the merge and the plot read.
json loadResult(const std::string& dir) {
  const std::string path = dir + "/ablation.json";
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open (an `sdspeed ablate --out` folder?)");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
  auto bad = [&](const std::string& what) { throw Error(path + ": not an sdspeed ablate result (" + what + ")"); };
  if (!j.is_object() || !j.contains("plan") || !j["plan"].is_string() || !j.contains("device") ||
      !j["device"].is_string() || !j.contains("rows") || !j["rows"].is_array() || j["rows"].empty())
    bad("want plan, device and a non-empty rows list");
  for (const auto& r : j["rows"])
    if (!r.is_object() || !r.contains("row") || !r["row"].is_string() || !r.contains("unet_ms_median") ||
        !r["unet_ms_median"].is_number() || !r.contains("activation_bytes") || !r["activation_bytes"].is_number())
      bad("a row without row, unet_ms_median or activation_bytes");
  return j;
}

int merge(const std::vector<std::string>& dirs, const std::string& out) {
  if (dirs.empty()) throw Error("--merge needs result folders (each with ablation.json)");
  std::vector<json> all;
  for (const auto& d : dirs) all.push_back(loadResult(d));
  std::ostringstream o;
  o << "# Ablation across devices: UNet ms per iteration (speed-up vs baseline)\n\n| row |";
  for (const auto& j : all) o << " " << j["device"].get<std::string>() << " |";
  o << "\n|---|";
  for (size_t i = 0; i < all.size(); ++i) o << "---:|";
  o << "\n";
  std::vector<std::string> names;
  for (const auto& j : all)
    for (const auto& r : j["rows"])
      if (std::find(names.begin(), names.end(), r["row"].get<std::string>()) == names.end())
        names.push_back(r["row"].get<std::string>());
  for (const auto& n : names) {
    o << "| " << n << " |";
    for (const auto& j : all) {
      const auto& rows = j["rows"];
      std::string cell = " - ";
      for (const auto& r : rows)
        if (r["row"] == n)
          cell = " " + fmt(r["unet_ms_median"].get<double>()) + " (" +
                 fmt(rows[0]["unet_ms_median"].get<double>() / r["unet_ms_median"].get<double>()) + "x) ";
      o << cell << "|";
    }
    o << "\n";
  }
  o << "\nSources:";
  for (const auto& d : dirs) o << " `" << d << "`";
  o << "\n";
  std::cout << o.str();
  if (!out.empty()) {
    fs::create_directories(out);
    writeFileAtomically(out + "/merged.md", o.str());
  }
  return 0;
}

}  // namespace

int cmdAblate(const std::vector<std::string>& rawArgv) {
  if (!rawArgv.empty() && (rawArgv[0] == "--help" || rawArgv[0] == "-h")) {
    std::cout << "usage: sdspeed ablate (--model DIR | --random-weights --model configs/models/sd15) [-W -H] [--steps N]\n"
                 "       [--ablation configs/ablation/paper.yaml] [--out results/ablation/<device-key>]\n"
                 "       [--keep-resident] [run options]\n"
                 "       (run options include --weights FORMAT[,KEY=FORMAT..] and --arithmetic f32|f16; a row's\n"
                 "       `weights` and `arithmetic` keys override them)\n"
                 "       sdspeed ablate --merge DIR... [--out DIR]\n"
                 "       sdspeed ablate --replot DIR        (the plot from DIR/ablation.json)\n"
                 "Runs the pipeline once per cumulative row; writes ablation.{md,csv,json} and a plot.\n"
                 "Rows without a release key release each component after use, unless --keep-resident.\n"
                 "A row none of whose added variants (in some family) can run on the device is printed as\n"
                 "`skipped: FAMILY VARIANT: REASON` and not measured (e.g. coopmat_f16 without cooperative matrices).\n";
    return 0;
  }
  if (rawArgv.size() == 2 && rawArgv[0] == "--replot") {
    // The plot again from a result folder's ablation.json (a device without gnuplot).
    plot(loadResult(rawArgv[1]), rawArgv[1]);
    return 0;
  }
  if (!rawArgv.empty() && rawArgv[0] == "--merge") {
    std::vector<std::string> dirs;
    std::string out;
    for (size_t i = 1; i < rawArgv.size(); ++i) {
      if (rawArgv[i] == "--out" && i + 1 < rawArgv.size()) out = rawArgv[++i];
      else if (rawArgv[i].rfind("--", 0) == 0) throw Error("ablate --merge DIR... [--out DIR]: unknown option " + rawArgv[i]);
      else dirs.push_back(rawArgv[i]);
    }
    return merge(dirs, out);
  }
  auto options = runSetupOptions();
  options.insert({"out", "config"});
  options.insert({"ablation"});
  options.insert(kDeviceOptions.begin(), kDeviceOptions.end());
  auto flags = runSetupFlags();
  flags.insert({"keep-resident"});
  flags.insert(kDeviceFlags.begin(), kDeviceFlags.end());
  const Args a(expandShortOptions(rawArgv), options, flags);
  const AblationPlan plan = loadAblationPlan(a.get("ablation", "configs/ablation/paper.yaml"));
  // One backend per API the rows name (`backend:`), made when a row first needs it.
  const std::string defaultApi = backendNameFromArgs(a);
  std::map<std::string, std::unique_ptr<Backend>> backends;
  auto backendOf = [&](const std::string& api) -> Backend& {
    auto& b = backends[api.empty() ? defaultApi : api];
    if (!b) b = backendForApi(a, api.empty() ? defaultApi : api);
    return *b;
  };
  Backend& ctx = backendOf("");
  const DeviceCaps& dev = ctx.caps();
  const RunSetup setup = runSetup(a, &dev);
  noteDatabase("ablate", setup.exec, ctx);
  const std::string out = a.get("out", "results/ablation/" + ctx.deviceKey());
  checkWritable(out + "/ablation.json", "--out");  // before the runs, not after them
  fs::create_directories(out);
  std::string command = "sdspeed ablate";
  for (const auto& s : rawArgv) command += " " + s;

  json j;
  j["plan"] = plan.name;
  j["device"] = dev.name;
  j["device_key"] = ctx.deviceKey();
  j["driver"] = dev.driverVersion;
  j["commit"] = sdspeedCommit();
  j["command"] = command;
  j["model"] = setup.src.describe() + (setup.seededTokens ? " (seeded token ids)" : "");
  j["run"] = std::to_string(setup.width) + "x" + std::to_string(setup.height) + ", " + std::to_string(setup.steps) +
             " steps of " + setup.schedulerName + ", batch " + std::to_string(setup.batch) + ", seed " +
             std::to_string(setup.seed);
  std::vector<float> baseline, decoded;
  int failures = 0;
  j["rows"] = json::array();
  j["skipped_rows"] = json::array();
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    const AblationRow& row = plan.rows[i];
    std::cout << "row " << i + 1 << "/" << plan.rows.size() << ": " << row.name << std::flush;
    Backend& be = backendOf(row.backend);
    // A row whose added variant this device cannot run at all (the tensor-core row
    // without cooperative matrices) is said and left out, not measured under its label.
    const StorageFormat format = rowExec(setup, row, a.get("layout", "nc4hw4")).format;
    if (const std::string why = ablationRowSkip(row, i ? &plan.rows[i - 1] : nullptr, be, format); !why.empty()) {
      std::cout << ": skipped: " << why << "\n";
      j["skipped_rows"].push_back({{"row", row.name}, {"index", i}, {"backend", be.api()}, {"reason", why}});
      continue;
    }
    const AblationMeasurement m = runRow(be, setup, row, a.get("layout", "nc4hw4"), a.has("keep-resident"),
                                         baseline.empty() ? nullptr : &baseline, decoded);
    if (baseline.empty()) baseline = decoded;  // the first measured row is the baseline
    failures += !m.withinTolerance;
    std::cout << ": UNet " << fmt(m.unetMedianMs) << " ms/iter, pipeline " << fmt(m.pipelineMs, 1)
              << " ms, activations " << fmt(mib(m.activationBytes), 1) << " MiB, max abs " << sci(m.maxAbs)
              << (m.withinTolerance ? "" : " (OVER its tolerance " + sci(row.maxAbs) + ")") << "\n    ran: "
              << variantsText(m.variants) << (m.fallbacks ? ", " + std::to_string(m.fallbacks) + " fallbacks" : "")
              << "\n";
    j["rows"].push_back(rowJson(m));
  }
  if (j["rows"].empty()) throw Error(plan.path + ": every row was skipped on " + dev.name + " (see the skipped: lines)");
  writeFileAtomically(out + "/ablation.json", j.dump(2) + "\n");
  writeFileAtomically(out + "/ablation.md", markdown(j));
  writeFileAtomically(out + "/ablation.csv", csv(j));
  plot(j, out);
  std::cout << "\n" << markdown(j) << "\nwritten: " << out << "/ablation.{md,csv,json}\n";
  if (failures) throw Error(std::to_string(failures) + " row(s) outside their tolerance of the baseline (see the table)");
  return 0;
}

}  // namespace sdspeed
