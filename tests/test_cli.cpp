// The sdspeed executable end to end: exit codes, one-line error messages for bad
// input, and a real `check` run writing a CSV and the dumped kernels.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli_support.h"
#include "test_support.h"
#include "tuning/csv.h"

using sdspeed_test::TempDir;
using sdspeed_test::Cli;
using sdspeed_test::Result;
using sdspeed_test::slurp;
namespace fs = std::filesystem;


TEST_F(Cli, DevicesExitsZero) {
  const Result r = run({"devices"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  int marked = 0;  // exactly one device is marked as the default
  std::stringstream ss(r.out);
  for (std::string l; std::getline(ss, l);) marked += l.rfind("* ", 0) == 0;
  EXPECT_EQ(marked, 1) << r.out;
  EXPECT_NE(r.out.find("max work-group"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST_F(Cli, UnknownDevice) {
  expectOneLineError({"check", "--device", "nosuchdevice"}, {"no OpenCL device matches 'nosuchdevice'"});
}

TEST_F(Cli, DeviceIndexOutOfRange) {
  expectOneLineError({"check", "--device", "97:3"}, {"no OpenCL device at index 97:3"});
}

TEST_F(Cli, UnknownOp) { expectOneLineError({"check", "--op", "nosuchop"}, {"unknown op 'nosuchop'", "groupnorm"}); }

TEST_F(Cli, ImpossibleStorageFormat) {
  expectOneLineError({"check", "--storage", "f32.image2d.nchw"}, {"f32.image2d.nchw", "impossible"});
}

TEST_F(Cli, UnknownStorageFormat) {
  expectOneLineError({"check", "--storage", "f32.buffer.nhwc"}, {"unknown storage format 'f32.buffer.nhwc'"});
}

TEST_F(Cli, ImpossibleParameterCombination) {
  expectOneLineError({"check", "--op", "groupnorm", "--variant", "one_pass", "--params", "VEC=8,CACHE=16"},
                     {"impossible parameters", "VEC * CACHE <= 64"});
}

TEST_F(Cli, UnknownParameter) {
  expectOneLineError({"check", "--op", "groupnorm", "--variant", "one_pass", "--params", "BOGUS=1"},
                     {"unknown parameter 'BOGUS'"});
}

TEST_F(Cli, UnknownVariant) {
  expectOneLineError({"check", "--op", "groupnorm", "--variant", "three_pass"}, {"unknown variant 'three_pass'"});
}

// f16 arithmetic on PoCL (no cl_khr_fp16): the f32 variants' f16 cases are reported
// unsupported with the reason (never run in f32 under an f16 label), and the half
// variant is skipped in a visible line; a bad list item is one line naming --arithmetic.
TEST_F(Cli, ArithmeticF16IsUnsupportedOnEveryOpenclVariant) {
  const Result r = run({"check", "--op", "softmax", "--arithmetic", "f16"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_CONTAINS(r.out, "computes in f32 only");
  EXPECT_CONTAINS(r.out, ".af16");
  EXPECT_CONTAINS(r.out, "skipped: softmax cooperative_f16: device lacks cl_khr_fp16");
  expectOneLineError({"check", "--op", "softmax", "--arithmetic", "f8"}, {"--arithmetic", "f8"});
}

// A cooperative-matrix variant on OpenCL: skipped, by the half check on a device without
// cl_khr_fp16 (PoCL) or by its device rule on one with it (a phone): never run.
static void expectOpenClRefusal(const std::string& out, const std::string& what) {
  const bool noHalf = out.find("skipped: " + what + ": device lacks cl_khr_fp16") != std::string::npos;
  const bool noKernels = out.find("skipped: " + what + ": " + what + " has no opencl kernels") != std::string::npos;
  EXPECT_TRUE(noHalf || noKernels) << out;
}

// gemm coopmat_f16 (tensor cores, Vulkan's VK_NV_cooperative_matrix) where there are
// none: one visible skipped line from check and nothing run, on OpenCL (PoCL: no half,
// and no OpenCL kernels at all) and on Vulkan (lavapipe: no cooperative matrices). A
// variant that vanished would be an unknown-variant error; one that ran, a passed case.
TEST_F(Cli, GemmCoopMatIsSkippedWithoutCooperativeMatrices) {
  const Result cl = run({"check", "--op", "gemm", "--variant", "coopmat_f16", "--arithmetic", "f16"});
  EXPECT_EQ(cl.exitCode, 0) << cl.describe();
  expectOpenClRefusal(cl.out, "gemm coopmat_f16");
  EXPECT_CONTAINS(cl.out, "check: 0 passed, 0 failed, 0 unsupported");
  const Result devices = run({"devices", "--device", "vulkan:0"});
  if (devices.exitCode != 0) GTEST_SKIP() << "no Vulkan device: " << devices.describe();
  if (devices.out.find("(subgroup, NV)") != std::string::npos)
    GTEST_SKIP() << "this Vulkan device has cooperative matrices: check runs coopmat_f16 there";
  const Result vk = run({"check", "--backend", "vulkan", "--op", "gemm", "--variant", "coopmat_f16", "--arithmetic", "f16"});
  EXPECT_EQ(vk.exitCode, 0) << vk.describe();
  EXPECT_CONTAINS(vk.out, "skipped: gemm coopmat_f16: device lacks cooperative matrices");
  EXPECT_CONTAINS(vk.out, "check: 0 passed, 0 failed, 0 unsupported");
}

// conv coopmat_f16 (the implicit GEMM on tensor cores) likewise: one skipped line per
// backend, nothing run, nothing dropped.
TEST_F(Cli, ConvCoopMatIsSkippedWithoutCooperativeMatrices) {
  const Result cl = run({"check", "--op", "conv", "--variant", "coopmat_f16", "--arithmetic", "f16"});
  EXPECT_EQ(cl.exitCode, 0) << cl.describe();
  expectOpenClRefusal(cl.out, "conv coopmat_f16");
  EXPECT_CONTAINS(cl.out, "check: 0 passed, 0 failed, 0 unsupported");
  const Result devices = run({"devices", "--device", "vulkan:0"});
  if (devices.exitCode != 0) GTEST_SKIP() << "no Vulkan device: " << devices.describe();
  if (devices.out.find("(subgroup, NV)") != std::string::npos)
    GTEST_SKIP() << "this Vulkan device has cooperative matrices: check runs coopmat_f16 there";
  const Result vk = run({"check", "--backend", "vulkan", "--op", "conv", "--variant", "coopmat_f16", "--arithmetic", "f16"});
  EXPECT_EQ(vk.exitCode, 0) << vk.describe();
  EXPECT_CONTAINS(vk.out, "skipped: conv coopmat_f16: device lacks cooperative matrices");
  EXPECT_CONTAINS(vk.out, "check: 0 passed, 0 failed, 0 unsupported");
}

// attention flash_coopmat_f16, the same gate as gemm coopmat_f16's: one skipped line on
// OpenCL (PoCL lacks half; a device with it gets "has no opencl kernels") and on lavapipe.
TEST_F(Cli, AttentionCoopMatIsSkippedWithoutCooperativeMatrices) {
  const Result cl = run({"check", "--op", "attention", "--variant", "flash_coopmat_f16", "--arithmetic", "f16"});
  EXPECT_EQ(cl.exitCode, 0) << cl.describe();
  expectOpenClRefusal(cl.out, "attention flash_coopmat_f16");
  EXPECT_CONTAINS(cl.out, "check: 0 passed, 0 failed, 0 unsupported");
  const Result devices = run({"devices", "--device", "vulkan:0"});
  if (devices.exitCode != 0) GTEST_SKIP() << "no Vulkan device: " << devices.describe();
  if (devices.out.find("(subgroup, NV)") != std::string::npos)
    GTEST_SKIP() << "this Vulkan device has cooperative matrices: check runs flash_coopmat_f16 there";
  const Result vk = run({"check", "--backend", "vulkan", "--op", "attention", "--variant", "flash_coopmat_f16",
                         "--arithmetic", "f16"});
  EXPECT_EQ(vk.exitCode, 0) << vk.describe();
  EXPECT_CONTAINS(vk.out, "skipped: attention flash_coopmat_f16: device lacks cooperative matrices");
  EXPECT_CONTAINS(vk.out, "check: 0 passed, 0 failed, 0 unsupported");
}

TEST_F(Cli, UnknownFlag) { expectOneLineError({"check", "--bogus-flag"}, {"unknown option --bogus-flag"}); }

TEST_F(Cli, OptionMissingValue) { expectOneLineError({"check", "--op"}, {"--op needs a value"}); }

TEST_F(Cli, UnknownVerb) { expectOneLineError({"frobnicate"}, {"unknown verb 'frobnicate'"}); }

// An output that cannot be written fails before the run, in one line naming the flag
// and the path (runtime/atomic_file.h checkWritable), not after every result is in.
TEST_F(Cli, UnwritableCsvFailsBeforeTheRun) {
  TempDir work;
  const std::string file = work.path() + "/a-file";
  std::ofstream(file) << "x";
  expectOneLineError({"check", "--op", "groupnorm", "--csv", file + "/result.csv"}, {"--csv", file + "/result.csv"});
  expectOneLineError({"check", "--op", "groupnorm", "--csv", work.path()}, {"--csv", "is a directory"});
}

TEST_F(Cli, CheckWritesCsvAndDumpedKernels) {
  TempDir work;
  const std::string dump = work.path() + "/dump", csv = work.path() + "/out/result.csv";
  const Result r = run({"check", "--op", "groupnorm", "--variant", "two_pass", "--points", "0", "--storage",
                        "f32.buffer.nchw", "--dump-kernels", dump, "--csv", csv});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("0 failed"), std::string::npos) << r.out;

  int clFiles = 0;
  ASSERT_TRUE(fs::is_directory(dump)) << r.describe();
  for (const auto& e : fs::directory_iterator(dump)) {
    if (e.path().extension() != ".cl") continue;
    ++clFiles;
    const std::string text = slurp(e.path().string());
    EXPECT_EQ(text.rfind("// build options:", 0), 0u) << e.path();
    EXPECT_NE(text.find("__kernel"), std::string::npos) << e.path();
    EXPECT_NE(e.path().filename().string().find("two_pass"), std::string::npos) << e.path();
  }
  EXPECT_GE(clFiles, 1);

  ASSERT_TRUE(fs::exists(csv)) << r.describe();
  const auto rows = sdspeed::csvParse(slurp(csv));
  ASSERT_GE(rows.size(), 2u) << "a header and at least one result";
  ASSERT_GE(rows[0].size(), 3u);
  EXPECT_EQ(rows[0][0], "device");
  EXPECT_EQ(rows[0][1], "op");
  EXPECT_EQ(rows[0][2], "variant");
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), rows[0].size()) << "row " << i;
    EXPECT_EQ(rows[i][1], "groupnorm");
    EXPECT_EQ(rows[i][2], "two_pass");
    EXPECT_EQ(rows[i][4], "f32.buffer.nchw");
  }
  EXPECT_EQ(slurp(csv).rfind("device,op,variant", 0), 0u);
}

TEST_F(Cli, KernelDirFromSourceTree) {
  const Result r = run({"check", "--op", "groupnorm", "--variant", "two_pass", "--points", "0", "--storage",
                        "f32.buffer.nchw", "--kernel-dir", std::string(SDSPEED_SOURCE_DIR) + "/kernels"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("0 failed"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST_F(Cli, KernelDirMissing) {
  expectOneLineError({"check", "--op", "groupnorm", "--variant", "two_pass", "--points", "0", "--storage",
                      "f32.buffer.nchw", "--kernel-dir", "/nonexistent"},
                     {"/nonexistent"});
}

// bench --memory-budget: F(2x2, 3x3) Winograd fits (430216 bytes on PoCL: tensors,
// planes, resident transforms), F(6x6, 3x3)'s larger planes (561288) do not and it is
// refused with its bytes; the direct kernel runs. Exit 0: a refusal under a budget is
// no failure.
TEST_F(Cli, BenchUnderAMemoryBudget) {
  TempDir work;
  const std::string csv = work.path() + "/bench.csv";
  const Result r = run({"bench", "--op", "conv", "--shape", "1x32x16x16", "--attrs", "k=3,cout=32", "--storage",
                        "f32.buffer.nchw", "--variant", "direct,winograd_f2x2_3x3,winograd_f6x6_3x3", "--memory-budget",
                        "500KiB", "--min-ms", "1", "--csv", csv});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  const auto rows = sdspeed::csvParse(slurp(csv));
  ASSERT_EQ(rows.size(), 4u) << slurp(csv);
  std::map<std::string, std::vector<std::string>> by;
  for (size_t i = 1; i < rows.size(); ++i) by[rows[i][3]] = rows[i];
  const size_t status = 6, message = 13, footprint = 14, derived = 15;
  ASSERT_EQ(rows[0][footprint], "footprint_bytes");
  EXPECT_EQ(by["direct"][status], "ok");
  EXPECT_EQ(by["winograd_f2x2_3x3"][status], "ok") << by["winograd_f2x2_3x3"][message];
  EXPECT_EQ(by["winograd_f2x2_3x3"][derived], "resident");  // per call would need as much here
  EXPECT_LE(std::stoull(by["winograd_f2x2_3x3"][footprint]), 500u * 1024);
  EXPECT_EQ(by["winograd_f6x6_3x3"][status], "unsupported");
  EXPECT_NE(by["winograd_f6x6_3x3"][message].find("over --memory-budget"), std::string::npos);
  EXPECT_GT(std::stoull(by["winograd_f6x6_3x3"][footprint]), 500u * 1024);
}

// check says up front how many cases are coming (issue #19 item 9: minutes of silence on
// PoCL before the table), and that count is what runs. Not a terminal here: no
// carriage returns or escape codes; any progress lines (one per 10 s) come before the table.
TEST_F(Cli, CheckAnnouncesItsCasesAndLogsPlainLines) {
  TempDir work;
  const std::string csv = work.path() + "/check.csv";
  const Result r = run({"check", "--op", "groupnorm", "--variant", "two_pass", "--points", "0", "--storage",
                        "f32.buffer.nchw,f32.buffer.nc4hw4", "--csv", csv});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  const size_t rows = sdspeed::csvParse(slurp(csv)).size() - 1;
  ASSERT_GE(rows, 2u);
  EXPECT_NE(r.out.find("\ncheck: " + std::to_string(rows) + " cases\n"), std::string::npos) << r.out;
  int passed = 0, failed = 0, unsupported = 0;
  const auto summary = r.out.rfind("check: ");
  ASSERT_EQ(std::sscanf(r.out.c_str() + summary, "check: %d passed, %d failed, %d unsupported", &passed, &failed,
                        &unsupported), 3) << r.out;
  EXPECT_EQ(static_cast<size_t>(passed + failed + unsupported), rows);
  EXPECT_EQ(r.out.find('\r'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\033'), std::string::npos) << r.out;
  const auto lastProgress = r.out.rfind("check: [");
  if (lastProgress != std::string::npos) {
    EXPECT_LT(lastProgress, r.out.find("\nop ")) << r.out;
  }
  EXPECT_EQ(r.err, "");
}
