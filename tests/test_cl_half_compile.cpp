// The OpenCL half kernels compiled in CI (issue #21 item 3). PoCL, CI's device, has no
// cl_khr_fp16, so the f16-arithmetic variants never run there; without this test a
// phone would find their first syntax error. For every family x variant computing in
// f16 x every value of every parameter x every storage and weight format the variant
// supports (pairwise: EveryHalfProgramCompiles says how), the program text is made as
// the runtime makes it (Family::programSource,
// with the accessor width and per-problem #defines its prepare() uses) and compiled by
// clang's OpenCL C front end with cl_khr_fp16 on (-fsyntax-only: parse and type-check
// against the OpenCL built-ins, e.g. half4 * float is an error there as on a device).
// Controls: the f32 variants' programs of the same families compile with the same
// command line; a deliberate error fails it; and prepare() on this device builds
// exactly the text this test makes for the f32 variants (so the width/#define table
// below is the runtime's). clang is found by CMake (SDSPEED_CLANG); without it the
// test is skipped, saying so (scripts/setup-debian installs it for CI).
#include <gtest/gtest.h>

#include "test_support.h"  // first: a private PoCL cache folder for this process

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "kernels/attention/attention_family.h"
#include "kernels/common/half_variant.h"
#include "kernels/lowering.h"
#include "kernels/registry.h"
#include "runtime/opencl/kernel_signature.h"

namespace sdspeed {
namespace {

Context& testContext() {
  static Context ctx(selectDevice(listDevices(), ""), ContextOptions{});
  return ctx;
}

// The families with f16-arithmetic variants.
std::vector<const Family*> halfFamilies() {
  std::vector<const Family*> out;
  for (const auto& fam : allFamilies())
    for (const auto& v : fam->variants())
      if (computesInHalf(v)) {
        out.push_back(fam.get());
        break;
      }
  return out;
}

// The accessor width prepare() builds with: the point's VEC for groupnorm (its accessors
// load VEC positions), 1 for every other family (GEMM's VEC is its kernel's own float4
// path: GemmFamily::prebuild). PreparedTextMatchesThisTest checks this against prepare().
int programVec(const Family& fam, const ParamPoint& p) {
  return fam.name() == "groupnorm" ? p["VEC"] : 1;
}

// The #define sets prepare() adds per problem: GEMM's GEGLU (twice the accumulators), and
// flash attention's HS (D / 4, a register-array bound) for each head size of the family's
// check problems that OpenCL's flash takes (D <= 160).
std::vector<std::map<std::string, int>> problemDefines(const Family& fam, const VariantDef& v) {
  if (fam.name() == "gemm") return {{}, {{"GEGLU", 1}}};
  if (fam.name() == "attention" && baseVariantName(v) == "flash") {
    std::vector<std::map<std::string, int>> out;
    for (const auto& prob : fam.checkProblems(false)) {
      const int hs = static_cast<int>(dynamic_cast<const AttentionProblem&>(*prob).headDim / 4);
      const std::map<std::string, int> d = {{"HS", hs}};
      if (hs <= 40 && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    }
    return out;
  }
  return {{}};
}

// The default point, then each value of each parameter on the defaults (where the
// constraints allow): every #if a single parameter selects, without the full product.
std::vector<ParamPoint> everyValue(const VariantDef& v) {
  std::vector<ParamPoint> out = {v.defaults()};
  for (const auto& def : v.params)
    for (int x : def.values) {
      auto values = v.defaults().values();
      values[def.name] = x;
      const ParamPoint p(values);
      if (v.violatedConstraint(p).empty() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
  return out;
}

// Storage formats x weight formats the family reads, computing in `a`, deduplicated
// as the runtime keys them (Family::keyFormat).
std::vector<StorageFormat> formatsOf(const Family& fam, DType a) {
  std::vector<DType> weights = {DType::F32};
  if (fam.readsWeights()) weights.push_back(DType::F16);
  if (fam.readsQuantizedWeights()) weights.insert(weights.end(), {DType::Q8_0, DType::Q4_0});
  std::vector<StorageFormat> out;
  for (const auto& f : StorageFormat::all())
    for (DType w : weights) {
      const StorageFormat k = fam.keyFormat(f.withWeights(w).withArithmetic(a));
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    }
  return out;
}

// This device's capabilities with half arithmetic: a variant's format rules (GroupNorm's
// one_pass cannot store into images) decided as on a phone.
DeviceCaps withFp16(DeviceCaps caps) {
  caps.fp16 = true;
  caps.extensions += " cl_khr_fp16";
  return caps;
}

struct Compiled {
  bool ok;
  std::string log;
};

// clang's OpenCL C front end on `source`: the runtime's language version (kBuildOptions),
// the built-ins' declarations, cl_khr_fp16 supported (the program must still enable it).
std::string clangCommand() {
  return std::string("'") + SDSPEED_CLANG + "' -x cl " + kBuildOptions +
         " -Xclang -finclude-default-header -Xclang -cl-ext=+cl_khr_fp16 -fsyntax-only";
}

Compiled clangCompile(const std::string& source) {
  char path[] = "/tmp/sdspeed-cl-XXXXXX.cl";
  const int fd = ::mkstemps(path, 3);
  if (fd < 0) return {false, "cannot create a temporary file"};
  ::close(fd);
  std::ofstream(path) << source;
  const std::string cmd = clangCommand() + " '" + path + "' 2>&1";
  Compiled c{false, {}};
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) c.log.append(buf, n);
    c.ok = ::pclose(p) == 0;
  }
  std::filesystem::remove(path);
  return c;
}

struct Program {
  std::string label, source;
};

// The front end's own command line (`-cc1 ...`) that clangCommand() runs on `input`,
// less `input`, as `clang -###` prints it (shell-quoted); "" if it prints none.
std::string frontEndCommand(const std::string& input) {
  std::ofstream(input) << "";  // the driver wants the file to exist
  std::string out;
  if (FILE* p = ::popen((clangCommand() + " -### '" + input + "' 2>&1").c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const std::string line = out.substr(out.rfind('\n') + 1), tail = " \"" + input + "\"";
  if (line.find("\"-cc1\"") == std::string::npos || line.size() < tail.size() ||
      line.compare(line.size() - tail.size(), tail.size(), tail) != 0)
    return {};
  return line.substr(0, line.size() - tail.size());
}

// clangCompile on each program, many programs to one process: a clang run is mostly its
// start (loading libclang-cpp and libLLVM, ~25 ms), so the front end's command line
// (what clang runs for one file) is given a batch of files; it parses each with its own
// preprocessor and Sema (no #define or #pragma carries over: DeliberateErrorsFail). A
// batch with any error is compiled again one program at a time, so each failure (and
// its log) is that program's own.
std::vector<Compiled> clangCompileAll(const std::vector<Program>& programs) {
  constexpr size_t kBatch = 64;
  sdspeed_test::TempDir dir;
  const std::string cc1 = frontEndCommand(dir.path() + "/p.cl");
  EXPECT_NE(cc1, "") << "clang -### printed no -cc1 line: compiling one program at a time";
  std::vector<Compiled> out;
  for (size_t first = 0; first < programs.size(); first += kBatch) {
    const size_t end = std::min(programs.size(), first + kBatch);
    std::string cmd = cc1;
    for (size_t i = first; i < end; ++i) {
      const std::string path = dir.path() + "/p" + std::to_string(i) + ".cl";
      std::ofstream(path) << programs[i].source;
      cmd += " '" + path + "'";
    }
    if (!cc1.empty() && std::system((cmd + " >/dev/null 2>&1").c_str()) == 0) {
      out.insert(out.end(), end - first, Compiled{true, {}});
      continue;
    }
    for (size_t i = first; i < end; ++i) out.push_back(clangCompile(programs[i].source));
  }
  return out;
}

// Kernels a program defines more than once (f32 and half bodies of one name, selected
// by #ifdef SD_HALF): the runtime binds arguments by the first definition's parameter
// list (runtime/opencl/kernel_signature.h), so every definition must declare the same.
std::string mismatchedTwins(const std::string& source, int& twins) {
  static const std::regex kernel(R"(__kernel[^;{]*?\bvoid\s+([A-Za-z_]\w*)\s*\()");
  std::map<std::string, std::vector<size_t>> at;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), kernel); it != std::sregex_iterator(); ++it)
    at[(*it)[1]].push_back(static_cast<size_t>(it->position(0)));
  auto text = [](const ClKernelSignature& s) {
    std::string t;
    for (const auto& p : s.params) t += p.declared + ", ";
    return t;
  };
  for (const auto& [name, positions] : at) {
    const std::string first = text(parseKernelSignature(source, name));
    for (size_t i = 1; i < positions.size(); ++i, ++twins) {
      const std::string other = text(parseKernelSignature(source.substr(positions[i]), name));
      if (other != first) return name + ": (" + first + ") vs (" + other + ")";
    }
  }
  return {};
}

class ClHalfCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(SDSPEED_CLANG).empty())
      GTEST_SKIP() << "clang not found at configure time: the f16 OpenCL kernels are NOT compile-checked "
                      "(install clang, e.g. scripts/setup-debian, and re-run cmake)";
    if (!std::filesystem::exists(SDSPEED_CLANG))
      GTEST_SKIP() << "clang (" << SDSPEED_CLANG << ") is gone: the f16 OpenCL kernels are NOT compile-checked";
  }
};

TEST_F(ClHalfCompile, EveryHalfProgramCompiles) {
  Context& ctx = testContext();
  const DeviceCaps phone = withFp16(ctx.device());
  int twins = 0;
  std::set<std::string> variants;
  std::vector<Program> programs;
  for (const Family* fam : halfFamilies()) {
    const auto problems = fam->checkProblems(false);
    for (const auto& v : fam->variants()) {
      if (!computesInHalf(v)) continue;
      EXPECT_TRUE(std::find(v.requiredExtensions.begin(), v.requiredExtensions.end(), "cl_khr_fp16") !=
                  v.requiredExtensions.end())
          << fam->name() << "." << v.name << " computes in half without requiring cl_khr_fp16";
      const auto formats = formatsOf(*fam, DType::F16);
      for (const StorageFormat& f : formats) {
        // A format the variant refuses on every check problem (images for one_pass_f16).
        bool supported = false;
        for (const auto& prob : problems)
          supported |= fam->unsupportedReason(v, v.defaults(), *prob, f, phone).empty();
        if (!supported) continue;
        // Pairwise, not the full product (CI time: ~1500 programs would take 2.5 minutes):
        // every point in every storage format with f32 weights, and in the first storage
        // format (f32 NCHW buffers) with every weight format; the default point in every
        // format. So each parameter value meets each storage and each weight format.
        const bool allPoints = f.weights == DType::F32 || f.withWeights(DType::F32) == formats.front();
        for (const ParamPoint& p : everyValue(v))
          for (const auto& extra : problemDefines(*fam, v)) {
            if (!allPoints && !(p == v.defaults())) continue;
            VariantDef def = v;
            for (const auto& [k, x] : extra) def.defines[k] = x;
            const std::string src = fam->programSource(ctx, def, p, f, programVec(*fam, p));
            const std::string label = fam->name() + "." + v.name + " [" + p.text() + "] " + f.name() +
                                      (extra.empty() ? "" : " +" + extra.begin()->first + "=" +
                                                            std::to_string(extra.begin()->second));
            EXPECT_EQ(mismatchedTwins(src, twins), "") << label;
            programs.push_back({label, src});
            variants.insert(fam->name() + "." + v.name);
          }
      }
    }
  }
  const std::vector<Compiled> results = clangCompileAll(programs);
  ASSERT_EQ(results.size(), programs.size());
  for (size_t i = 0; i < programs.size(); ++i) EXPECT_TRUE(results[i].ok) << programs[i].label << ":\n" << results[i].log;
  std::string names;
  for (const auto& n : variants) names += " " + n;
  std::cout << "[   INFO   ] " << programs.size() << " f16-arithmetic programs compiled:" << names << "\n";
  // kernels/README.md's table: every half twin is compiled here.
  for (const char* name : {"activation.slices_f16", "binary.slices_f16", "groupnorm.one_pass_f16",
                           "layernorm.cooperative_f16", "layernorm.split_f16", "softmax.cooperative_f16", "softmax.split_f16", "gemm.direct_f16", "gemm.tiled_f16", "gemm.gemv_f16",
                           "conv.im2col_gemm_f16", "conv.conv1x1_f16", "attention.flash_f16"})
    EXPECT_EQ(variants.count(name), 1u) << name << " was not compiled";
  // act_slices, gn_one_pass and gemm_direct have f32 and half bodies: the check above ran.
  EXPECT_GT(twins, 0);
}

// The control: the f32 variants of the same families, default points, every format, on
// the same command line (vload_half, images, quantized blocks: what a real device takes).
TEST_F(ClHalfCompile, F32ProgramsCompileTheSameWay) {
  Context& ctx = testContext();
  std::vector<Program> programs;
  for (const Family* fam : halfFamilies())
    for (const auto& v : fam->variants()) {
      if (computesInHalf(v)) continue;
      for (const StorageFormat& f : formatsOf(*fam, DType::F32)) {
        const ParamPoint p = v.defaults();
        VariantDef def = v;  // with the first of prepare()'s per-problem #define sets (flash's HS)
        const auto extras = problemDefines(*fam, v);
        for (const auto& [k, x] : extras.front()) def.defines[k] = x;
        programs.push_back({fam->name() + "." + v.name + " " + f.name(),
                            fam->programSource(ctx, def, p, f, programVec(*fam, p))});
      }
    }
  ASSERT_GT(programs.size(), 0u);
  const std::vector<Compiled> results = clangCompileAll(programs);
  ASSERT_EQ(results.size(), programs.size());
  for (size_t i = 0; i < programs.size(); ++i) EXPECT_TRUE(results[i].ok) << programs[i].label << ":\n" << results[i].log;
}

// The check can fail: a half program with one deliberate error is refused, and so is
// half arithmetic without `#pragma OPENCL EXTENSION cl_khr_fp16 : enable`.
TEST_F(ClHalfCompile, DeliberateErrorsFail) {
  Context& ctx = testContext();
  const Family& fam = *halfFamilies().front();
  const VariantDef* half = nullptr;
  for (const auto& v : fam.variants())
    if (computesInHalf(v)) half = &v;
  ASSERT_NE(half, nullptr);
  const ParamPoint p = half->defaults();
  const std::string src = fam.programSource(ctx, *half, p, StorageFormat{}.withArithmetic(DType::F16), programVec(fam, p));
  ASSERT_TRUE(clangCompile(src).ok);
  const Compiled broken = clangCompile(src + "\n__kernel void sd_broken(__global float* y) { y[0] = 1.0f }\n");
  EXPECT_FALSE(broken.ok);
  EXPECT_CONTAINS(broken.log, "expected ';'");
  const Compiled noPragma = clangCompile("__kernel void sd_h(__global float* y) { half4 v = (half4)(1.0h); y[0] = v.x; }\n");
  EXPECT_FALSE(noPragma.ok) << noPragma.log;
  // Many programs to one front end: the broken one among good ones fails, and only it;
  // the one without the pragma fails after programs that enabled it (nothing carries over).
  std::vector<Program> batch(70, Program{"good", src});
  batch[66].source += "\n__kernel void sd_broken(__global float* y) { y[0] = 1.0f }\n";
  batch[10].source = "__kernel void sd_h(__global float* y) { half4 v = (half4)(1.0h); y[0] = v.x; }\n";
  const std::vector<Compiled> results = clangCompileAll(batch);
  ASSERT_EQ(results.size(), batch.size());
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(results[i].ok, i != 10 && i != 66) << i;
  EXPECT_CONTAINS(results[66].log, "expected ';'");
}

// The program text this test compiles is the one the runtime builds: prepareOp() on
// this device (f32 variants: PoCL cannot build the half ones, whose prepare() is the
// same code) records each program it builds, which must equal programSource with this
// test's width and #defines (GEGLU included). A program prepare() finds already built
// (a memory hit) adds no record: it was checked when it was built.
TEST_F(ClHalfCompile, PreparedTextMatchesThisTest) {
  Context& ctx = testContext();
  for (const Family* fam : halfFamilies())
    for (const auto& v : fam->variants()) {
      if (computesInHalf(v)) continue;
      const StorageFormat f{};
      const ParamPoint p = v.defaults();
      std::set<std::string> expected;
      for (const auto& extra : problemDefines(*fam, v)) {
        VariantDef def = v;
        for (const auto& [k, x] : extra) def.defines[k] = x;
        expected.insert(fam->programSource(ctx, def, p, f, programVec(*fam, p)));
      }
      size_t checked = 0, prepared = 0;
      for (const auto& prob : fam->checkProblems(false)) {
        if (!fam->unsupportedReason(v, p, *prob, f, ctx.device()).empty()) continue;  // split's SPLIT > 1 on a CPU
        ++prepared;
        const size_t before = ctx.programs().records().size();
        prepareOp(ctx, *fam, v, p, *prob, f);  // the runtime's entry point (kernels/lowering.h)
        const auto records = ctx.programs().records();
        for (size_t i = before; i < records.size(); ++i, ++checked)
          EXPECT_EQ(expected.count(records[i].source), 1u)
              << fam->name() << "." << v.name << " " << prob->text() << ": prepare() built " << records[i].label
              << ", a program text this test does not make";
      }
      // GEMM builds two programs (with and without GEGLU), flash one per head size, the others one.
      if (prepared > 0) {
        EXPECT_EQ(checked, expected.size()) << fam->name() << "." << v.name;
      }
    }
}

}  // namespace
}  // namespace sdspeed
