#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "cli/table.h"
#include "kernels/registry.h"
#include "runtime/atomic_file.h"
#include "runtime/opencl/cl_error.h"
#include "tuning/check.h"
#include "tuning/csv.h"

namespace sdspeed {
namespace {

std::vector<const Family*> familiesFromArgs(const Args& args) {
  std::vector<const Family*> out;
  for (const auto& name : args.list("op")) out.push_back(&findFamily(name));
  if (out.empty())
    for (const auto& f : allFamilies()) out.push_back(f.get());
  return out;
}

std::vector<StorageFormat> formatsFromArgs(const Args& args) {
  std::vector<StorageFormat> out;
  for (const auto& s : args.list("storage")) out.push_back(StorageFormat::parse(s));
  if (out.empty()) out = StorageFormat::all();
  return withArithmeticFromArgs(args, withWeightFormatsFromArgs(args, out));
}

// Where a check stands: PoCL builds a program per case, minutes before the table. Like
// tune's progress, on stdout (stderr stays for the one error line): on a terminal one
// line updated per case and cleared before the table; otherwise (a CI log) a line at
// most every kLogEvery, so a short check prints none and a long one a few.
class CheckProgress {
 public:
  explicit CheckProgress(size_t total)
      : total_(total), tty_(::isatty(STDOUT_FILENO)), start_(std::chrono::steady_clock::now()), last_(start_) {}

  void done(int failed, const std::string& lastCase) {
    ++done_;
    const auto now = std::chrono::steady_clock::now();
    if (!tty_ && now - last_ < kLogEvery) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    char line[160];
    std::snprintf(line, sizeof line, "check: [%zu/%zu] failures %d | %.0fs, eta %.0fs | ", done_, total_, failed, elapsed,
                  elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_));
    if (tty_) {
      // Cut to the terminal's usual width: a wrapped line would not be overwritten.
      std::cout << "\r\033[K" << (line + lastCase).substr(0, 120) << std::flush;
      shown_ = true;
    } else {
      std::cout << line << lastCase << std::endl;  // flushed: a killed run keeps its log
    }
  }
  void finish() {
    if (shown_) std::cout << "\r\033[K" << std::flush;
  }

 private:
  static constexpr std::chrono::seconds kLogEvery{10};
  size_t total_, done_ = 0;
  bool tty_, shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace

int cmdCheck(const std::vector<std::string>& argv) {
  auto options = kDeviceOptions;
  options.insert({"op", "variant", "storage", "weights", "arithmetic", "points", "params", "seed", "dump-kernels", "csv", "shape", "attrs"});
  auto flags = kDeviceFlags;
  flags.insert({"full", "help"});
  Args args(argv, options, flags);
  if (args.has("help")) {
    std::cout << "usage: sdspeed check [--op OP,..] [--variant V,..] [--storage F,..] [--weights f32,f16,int8,int4] [--arithmetic f32,f16]\n"
                 "                     [--params K=V,..]\n"
                 "                     [--points N] [--seed S] [--full] [--csv FILE] [--dump-kernels DIR]\n"
                 "                     [--shape NxCxHxW[,..] [--attrs K=V,..]]   (one --op: these problems only)\n"
                 "Runs every variant (defaults + N sampled points, default 2) in every storage format on\n"
                 "fresh random inputs and compares with the double-precision reference. --full adds the\n"
                 "large Stable Diffusion shapes. --weights (default f32) runs each storage format once per\n"
                 "weight format: f16 weights are checked against the reference on the rounded weights,\n"
                 "the error against the unrounded ones is the `vs unrounded` column; int8/int4 (ggml q8_0/q4_0\n"
                 "blocks) against the reference on the dequantized weights, the quantization's own error in\n"
                 "`vs unrounded`. Families that read no weights run f32 weights only (f16 is the same\n"
                 "program); families with no quantized path run int8/int4 as f16 weights (a skipped: line\n"
                 "says so). --arithmetic (default f32): what kernels compute in; f16 cases of variants that\n"
                 "compute in f32 only are reported unsupported, and the _f16 variants are skipped in a visible\n"
                 "line on a device without cl_khr_fp16 (kernels/README.md). Exit status 1\n"
                 "if any case fails.\n";
    return 0;
  }
  const auto families = familiesFromArgs(args);
  const auto formats = formatsFromArgs(args);
  const auto variantNames = args.list("variant");
  const int extra = args.getInt("points", 2);
  const uint64_t seed = static_cast<uint64_t>(args.getInt("seed", 1234));
  // Validate every name before touching the device, so a typo fails fast.
  for (const auto& vn : variantNames) {
    bool found = false;
    for (const Family* f : families)
      for (const auto& v : f->variants()) found |= v.name == vn;
    if (!found) families.front()->variant(vn);  // throws "unknown variant"
  }
  if (args.has("params")) {
    if (families.size() != 1 || variantNames.size() != 1)
      throw Error("--params needs exactly one --op and one --variant");
    families.front()->variant(variantNames.front()).parsePoint(args.get("params"));
  }

  // --shape: the given problems instead of the family's check set (one op).
  std::vector<ProblemPtr> shapeProblems;
  if (args.has("shape")) {
    if (families.size() != 1) throw Error("--shape needs exactly one --op");
    for (const auto& s : args.list("shape"))
      shapeProblems.push_back(families.front()->makeProblem(parseShape(s), attrsFromArgs(args)));
  } else if (args.has("attrs")) {
    throw Error("--attrs needs --shape");
  }

  // Before the run, not after it: an unwritable --csv would throw away every result.
  if (args.has("csv")) checkWritable(args.get("csv"), "--csv");
  std::unique_ptr<Backend> backend = backendFromArgs(args);
  Backend& ctx = *backend;
  std::cout << "device: " << ctx.describe() << "\n";
  TextTable table({"op", "variant", "params", "storage", "problem", "max abs err", "rel L2", "vs unrounded", "scratch",
                   "result"});
  std::string csv = csvRow({"device", "op", "variant", "params", "storage", "problem", "status",
                            "max_abs_err", "rel_l2", "rel_l2_vs_unrounded", "scratch_bytes", "message"});
  int passed = 0, failed = 0, unsupported = 0;
  std::vector<std::string> failures;
  // What this device cannot run for lack of a capability (fp16 arithmetic, sub-groups,
  // images): printed as "skipped: ..." lines, never dropped silently.
  std::vector<std::string> skipped;
  std::map<std::string, int> lackedCases;
  uint64_t caseSeed = seed;
  // Every case first (so the progress line knows the total), in the order they run
  // and draw their seeds.
  struct Case {
    const Family* fam;
    const VariantDef* variant;
    ParamPoint point;
    StorageFormat format;
    ProblemPtr problem;
  };
  std::vector<Case> cases;
  for (const Family* fam : families) {
    // f16 weights are the f32 case for a family that reads no weights (same program,
    // same data: Family::keyFormat): run once, and say so.
    // Likewise int8/int4 weights for a family with no quantized path: its f16 case.
    std::vector<StorageFormat> famFormats;
    for (const auto& f : formats) {
      if (std::find(famFormats.begin(), famFormats.end(), fam->keyFormat(f)) == famFormats.end())
        famFormats.push_back(fam->keyFormat(f));
      const std::string note = fam->keyFormatNote(f);
      if (!note.empty() && std::find(skipped.begin(), skipped.end(), note) == skipped.end()) skipped.push_back(note);
    }
    const auto problems = shapeProblems.empty() ? fam->checkProblems(args.has("full")) : shapeProblems;
    for (const auto& v : fam->variants()) {
      if (!variantNames.empty() &&
          std::find(variantNames.begin(), variantNames.end(), v.name) == variantNames.end())
        continue;
      std::vector<ParamPoint> points = args.has("params")
                                           ? std::vector<ParamPoint>{v.parsePoint(args.get("params"))}
                                           : samplePoints(v, ctx.caps(), extra, seed);
      if (points.empty()) {
        std::string why = v.deviceLimitReason(v.defaults(), ctx.caps());
        skipped.push_back(fam->name() + " " + v.name + ": " +
                          (why.empty() ? "no parameter point this device can run" : why));
      }
      // A variant whose defaults are sized to the problem (VariantDef::fitDefaults:
      // coopmat split-K, FlashAttention's O columns at D = 160 and 512) is checked at each
      // problem's fitted defaults where the declared ones are a case, the point an untuned
      // run executes; a fitted point the device cannot run is a skipped line (fitPoint
      // keeps the constraints, and samplePoints checked the unfitted points).
      if (v.fitDefaults && !args.has("params")) {
        for (const auto& p : points)
          for (const auto& f : famFormats)
            for (const auto& prob : problems) {
              const ParamPoint q = p == v.defaults() ? v.fitPoint(p, *prob) : p;
              if (const std::string why = v.deviceLimitReason(q, ctx.caps()); !why.empty()) {
                const std::string line = fam->name() + " " + v.name + " [" + q.text() + "] " + prob->text() + ": " + why;
                if (std::find(skipped.begin(), skipped.end(), line) == skipped.end()) skipped.push_back(line);
                continue;
              }
              cases.push_back({fam, &v, q, f, prob});
            }
        continue;
      }
      for (const auto& p : points)
        for (const auto& f : famFormats)
          for (const auto& prob : problems) cases.push_back({fam, &v, p, f, prob});
    }
  }
  // The total up front, on a terminal or not: the log says how much is coming.
  std::cout << "check: " << cases.size() << (cases.size() == 1 ? " case" : " cases") << std::endl;
  CheckProgress progress(cases.size());
  for (const Case& c : cases) {
    CheckResult r = checkCase(ctx, *c.fam, *c.variant, c.point, *c.problem, c.format, ++caseSeed);
    std::string result = statusName(r.status);
    if (r.status == Status::Ok) ++passed;
    else if (r.status == Status::Unsupported) {
      ++unsupported;
      result += " (" + r.message.substr(0, r.message.find('\n')) + ")";
      if (std::string cap = lackedCapability(r.message); !cap.empty()) ++lackedCases[cap];
    }
    else {
      ++failed;
      result = "FAIL " + result;
      failures.push_back(r.variant + " [" + r.params + "] " + r.storage + " " + r.problem + ": " + r.message);
    }
    const bool ran = r.status == Status::Ok || r.status == Status::Inaccurate;
    table.add({r.family, r.variant, r.params, r.storage, r.problem,
               ran ? fmtSci(r.cmp.maxAbsErr) : "-", ran ? fmtSci(r.cmp.relL2) : "-",
               ran && r.relL2VsUnrounded >= 0 ? fmtSci(r.relL2VsUnrounded) : "-", fmtBytes(r.scratchBytes),
               result});
    csv += csvRow({ctx.caps().name, r.family, r.variant, r.params, r.storage, r.problem,
                   statusName(r.status), ran ? fmtSci(r.cmp.maxAbsErr, 3) : "",
                   ran ? fmtSci(r.cmp.relL2, 3) : "",
                   ran && r.relL2VsUnrounded >= 0 ? fmtSci(r.relL2VsUnrounded, 3) : "",
                   std::to_string(r.scratchBytes), r.message});
    progress.done(failed, r.family + " " + r.variant + " " + r.storage + " " + r.problem);
  }
  progress.finish();
  table.print(std::cout);
  for (const auto& line : skipped) std::cout << "skipped: " << line << "\n";
  for (const auto& [cap, n] : lackedCases)
    std::cout << "skipped: " << cap << ": " << n << (n == 1 ? " case" : " cases") << " unsupported\n";
  for (const auto& f : failures) std::cout << "FAILED: " << f << "\n";
  std::cout << ctx.buildSummary() << "\n";
  if (args.has("csv")) writeFileAtomically(args.get("csv"), csv);
  if (args.has("dump-kernels")) std::cout << ctx.dumpKernels(args.get("dump-kernels")) << "\n";
  std::cout << "check: " << passed << " passed, " << failed << " failed, " << unsupported
            << " unsupported\n";
  return failed ? 1 : 0;
}

}  // namespace sdspeed
