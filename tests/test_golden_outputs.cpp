// Golden outputs: bit-identity across refactors (the backend-neutral core issue). Every
// family's every variant at its default point, on fixed inputs (seeded), in two formats
// (f32 buffers and f16 NC4HW4 images: the accessors both ways), hashed (FNV-1a of the
// output's physical bytes, CheckResult::outputHash); and the tiny pipeline's decoded
// image (tiny-sd-a, 4 DPM++ steps, its saved inputs) hashed the same way. The hashes
// live in tests/data/golden/<device key>.txt with the device's name: a change that
// moves one output bit fails here, naming the case.
//
// Hashes hold for one compiler target (PoCL compiles for the host CPU; another CPU or
// driver may round differently), so a device without a file, or whose name differs from
// the file's, is skipped visibly. Record or re-record, after showing a change is meant
// to move outputs:  SDSPEED_GOLDEN_RECORD=1 ctest -R test_golden_outputs
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli_support.h"  // first (test_support.h): a private PoCL cache folder
#include "kernels/registry.h"
#include "pipeline/safetensors.h"
#include "runtime/hash.h"
#include "tuning/check.h"

namespace sdspeed {
namespace {

const DeviceInfo& goldenDevice() {
  static const DeviceInfo dev = selectDevice(listDevices(), "");
  return dev;
}

std::string goldenPath() {
  return std::string(SDSPEED_SOURCE_DIR) + "/tests/data/golden/" + goldenDevice().key() + ".txt";
}

bool recording() {
  const char* r = std::getenv("SDSPEED_GOLDEN_RECORD");
  return r && std::string(r) == "1";
}

// The recorded file: "device: NAME" then "CASE HASH" lines.
struct GoldenFile {
  std::string device;
  std::map<std::string, std::string> hashes;
};

GoldenFile readGolden() {
  GoldenFile g;
  std::ifstream in(goldenPath());
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("device: ", 0) == 0) {
      g.device = line.substr(8);
      continue;
    }
    const size_t sp = line.rfind(' ');
    if (line.empty() || line[0] == '#' || sp == std::string::npos) continue;
    g.hashes[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return g;
}

// Compares (or, recording, collects) one case's hash.
class Golden : public sdspeed_test::Cli {
 protected:
  void SetUp() override {
    if (recording()) return;
    golden_ = readGolden();
    if (golden_.hashes.empty())
      GTEST_SKIP() << "no golden outputs for device " << goldenDevice().key() << " (" << goldenPath()
                   << "): record them with SDSPEED_GOLDEN_RECORD=1";
    if (golden_.device != goldenDevice().name)
      GTEST_SKIP() << "golden outputs were recorded on '" << golden_.device << "', this device is '"
                   << goldenDevice().name << "': another compiler target may round differently";
  }
  void expectHash(const std::string& name, const std::string& hash) {
    if (recording()) {
      recorded()[name] = hash;
      return;
    }
    auto it = golden_.hashes.find(name);
    if (it == golden_.hashes.end()) {
      ADD_FAILURE() << name << ": no golden hash recorded (re-record with SDSPEED_GOLDEN_RECORD=1)";
      return;
    }
    EXPECT_EQ(hash, it->second) << name << ": output bits changed";
  }
  // Appends what this test recorded to the file (tests run in one process, in order).
  static std::map<std::string, std::string>& recorded() {
    static std::map<std::string, std::string> r;
    return r;
  }
  static void TearDownTestSuite() {
    if (!recording() || recorded().empty()) return;
    GoldenFile g = readGolden();
    for (const auto& [k, v] : recorded()) g.hashes[k] = v;
    std::ofstream out(goldenPath(), std::ios::trunc);
    out << "# tests/test_golden_outputs.cpp: output hashes, recorded with SDSPEED_GOLDEN_RECORD=1\n";
    out << "device: " << goldenDevice().name << "\n";
    for (const auto& [k, v] : g.hashes) out << k << ' ' << v << "\n";
  }
  GoldenFile golden_;
};

TEST_F(Golden, EveryVariantsDefaultPoint) {
  Context ctx(goldenDevice(), ContextOptions{});
  const StorageFormat formats[] = {StorageFormat::parse("f32.buffer.nchw"), StorageFormat::parse("f16.image2d.nc4hw4")};
  int ran = 0;
  for (const auto& fam : allFamilies())
    for (const auto& v : fam->variants())
      for (const auto& f : formats) {
        const auto problems = fam->checkProblems(false);
        const ProblemPtr& prob = problems.front();
        const CheckResult r = checkCase(ctx, *fam, v, v.defaults(), *prob, f, /*seed=*/20261204);
        const std::string name = fam->name() + "." + v.name + "/" + f.name() + "/" + prob->text();
        if (r.status == Status::Unsupported) continue;  // the same on every run of one device
        ASSERT_TRUE(r.passed()) << name << ": " << r.message;
        expectHash(name, r.outputHash);
        ++ran;
      }
  EXPECT_GT(ran, 40);
}

TEST_F(Golden, TinyPipelineDecodedImage) {
  const std::string a = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a", ref = a + "/reference.safetensors";
  sdspeed_test::TempDir out;
  const std::string dec = out.path() + "/dec.safetensors";
  const auto r = run({"run", "--model", a, "--steps", "4", "--scheduler", "dpmpp2m", "--input-ids",
                      ref + ":input_ids_cond", "--uncond-input-ids", ref + ":input_ids_uncond", "--init-latents",
                      ref + ":init_latents", "--db-dir", std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned",
                      "--no-warmup", "--save-decoded", dec});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  SafetensorsFile decoded(dec);
  const std::vector<float> px = decoded.toFloat("decoded");
  expectHash("pipeline/tiny-sd-a/dpmpp2m-4/decoded",
             Fnv1a().add(std::string_view(reinterpret_cast<const char*>(px.data()), px.size() * sizeof(float))).hex());
}

}  // namespace
}  // namespace sdspeed
