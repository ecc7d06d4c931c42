// The config-only size estimate (pipeline/model/model_size.h) against the graphs the
// builders make: ops, weight elements, the largest weight and the largest activation,
// equal, for SD 1.5 and both tiny fixtures, fused and unfused, and with the repeat counts
// (layers per block, transformer layers, CLIP layers) changed, so a builder change the
// formulas do not follow fails here. And the counts of an absurd config, in no time.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "pipeline/model/model_size.h"
#include "pipeline/model/sd_graphs.h"
#include "pipeline/run/memory_check.h"
#include "test_support.h"

namespace sdspeed {
namespace {

const std::string kSd15 = std::string(SDSPEED_SOURCE_DIR) + "/configs/models/sd15";
const std::string kA = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
const std::string kB = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-b";

ComponentSize measured(const Graph& g) {
  ComponentSize s;
  s.nodes = static_cast<long double>(g.nodes().size());
  for (const GraphTensor& t : g.tensors()) {
    const auto e = static_cast<long double>(t.shape.elements());
    if (t.kind == GraphTensor::Kind::Weight) {
      s.weightElements += e;
      s.largestWeight = std::max(s.largestWeight, e);
    } else if (t.kind == GraphTensor::Kind::Activation) {
      s.largestActivation = std::max(s.largestActivation, e);
    }
  }
  return s;
}

void expectEqual(const ComponentSize& estimate, const Graph& g, const std::string& what) {
  const ComponentSize m = measured(g);
  EXPECT_EQ(estimate.nodes, m.nodes) << what << ": ops";
  EXPECT_EQ(estimate.weightElements, m.weightElements) << what << ": weight elements";
  EXPECT_EQ(estimate.largestWeight, m.largestWeight) << what << ": largest weight";
  EXPECT_EQ(estimate.largestActivation, m.largestActivation) << what << ": largest activation";
}

void expectModel(const std::string& dir, int64_t latent, int unetLayers, int xformerLayers, int vaeLayers, int clipLayers) {
  UNetConfig u = loadUNetConfig(dir + "/unet/config.json");
  VaeConfig v = loadVaeConfig(dir + "/vae/config.json");
  ClipConfig c = loadClipConfig(dir + "/text_encoder/config.json");
  if (unetLayers) u.layersPerBlock = unetLayers;
  if (xformerLayers) u.transformerLayers = xformerLayers;
  if (vaeLayers) v.layersPerBlock = vaeLayers;
  if (clipLayers) c.layers = clipLayers;
  const std::string what = dir + " layers " + std::to_string(u.layersPerBlock) + "/" + std::to_string(u.transformerLayers) +
                           "/" + std::to_string(v.layersPerBlock) + "/" + std::to_string(c.layers);
  for (bool fuse : {true, false}) {
    const GraphOptions o{fuse};
    const std::string f = what + (fuse ? " fused" : " unfused");
    expectEqual(unetSize(u, 2, latent, latent + 8, c.positions, fuse), buildUNetGraph(u, 2, latent, latent + 8, c.positions, o),
                f + " unet");
    expectEqual(vaeDecoderSize(v, 1, latent, latent + 8, fuse), buildVaeDecoderGraph(v, 1, latent, latent + 8, o),
                f + " vae_decoder");
    expectEqual(textEncoderSize(c, 2, c.positions, fuse), buildTextEncoderGraph(c, 2, c.positions, "text_model.", o),
                f + " text_encoder");
  }
}

TEST(ModelSize, EqualsTheBuiltGraphs) {
  expectModel(kSd15, 64, 0, 0, 0, 0);
  expectModel(kA, 16, 0, 0, 0, 0);
  expectModel(kB, 16, 0, 0, 0, 0);
}

TEST(ModelSize, FollowsTheRepeatCounts) {
  expectModel(kA, 16, 1, 1, 1, 1);
  expectModel(kA, 16, 3, 2, 3, 2);
  expectModel(kB, 8, 4, 3, 2, 5);
  expectModel(kSd15, 16, 1, 2, 3, 1);
}

TEST(ModelSize, AbsurdConfigsAreCountedNotBuilt) {
  UNetConfig u = loadUNetConfig(kA + "/unet/config.json");
  u.layersPerBlock = 1000000000;
  const auto t = std::chrono::steady_clock::now();
  const ComponentSize s = unetSize(u, 2, 16, 16, 77);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), 0.1);
  EXPECT_GT(s.nodes, 1e10L);
  EXPECT_GT(s.weightElements, 1e13L);
  ClipConfig c = loadClipConfig(kA + "/text_encoder/config.json");
  c.vocab = 1000000000000;
  EXPECT_EQ(textEncoderSize(c, 2, 77).largestWeight, 1e12L * static_cast<long double>(c.hidden));
}

ModelConfigs configs(const std::string& dir) {
  return {loadUNetConfig(dir + "/unet/config.json"), loadVaeConfig(dir + "/vae/config.json"),
          loadClipConfig(dir + "/text_encoder/config.json")};
}

MemoryCapacity capacity(uint64_t device, uint64_t host) {
  MemoryCapacity c;
  c.deviceBytes = device;
  c.device = "the test device";
  c.host = {host, "the test's host"};
  return c;
}

std::string refusal(const ModelConfigs& m, const FitRequest& r, const MemoryCapacity& c) {
  try {
    checkModelFits(m, r, c);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

FitRequest request(int64_t latent, int64_t batch = 2) {
  FitRequest r;
  r.batch = batch;
  r.latentH = r.latentW = latent;
  return r;
}

// SD 1.5 at 512x512: 3.4 GB of f32 UNet weights fit 16 GB, not 2 GB; with f16 weights or
// a budget (weights may stream) they fit 2 GB.
TEST(MemoryCheck, Sd15AgainstTheDevice) {
  const ModelConfigs m = configs(kSd15);
  EXPECT_EQ(refusal(m, request(64), capacity(16ull << 30, 64ull << 30)), "");
  const std::string e = refusal(m, request(64), capacity(2ull << 30, 64ull << 30));
  EXPECT_CONTAINS(e, "unet/config.json: block_out_channels: [320, 640, 1280, 1280]");
  EXPECT_CONTAINS(e, "the unet need at least 3.4");
  EXPECT_CONTAINS(e, "the test device");
  FitRequest half = request(64);
  half.weightBytes["unet"] = 2;
  EXPECT_EQ(refusal(m, half, capacity(2ull << 30, 64ull << 30)), "");
  FitRequest budget = request(64);
  budget.weightsMayStream = true;
  EXPECT_EQ(refusal(m, budget, capacity(2ull << 30, 64ull << 30)), "");
  // All three resident need the sum.
  FitRequest resident = request(64);
  resident.keepResident = true;
  EXPECT_CONTAINS(refusal(m, resident, capacity(3800ull << 20, 64ull << 30)), "kept resident");
}

// The estimate's weight bytes per element follow --weights per layer kind: a kind kept
// f32 in an f16 component counts the component at 4 bytes (an upper bound), so
// `f16,unet.conv=f32` does not fit where `f16` does.
TEST(MemoryCheck, WeightBytesFollowLayerKinds) {
  ExecOptions e;
  parseWeightsSpec("f16", "--weights", e);
  const FitRequest f16 = fitRequest(e, 2, 64, 64);
  for (const char* c : {"text_encoder", "unet", "vae_decoder"}) EXPECT_EQ(f16.weightBytes.at(c), 2u) << c;
  parseWeightsSpec("f16,unet.conv=f32", "--weights", e);
  const FitRequest kind = fitRequest(e, 2, 64, 64);
  EXPECT_EQ(kind.weightBytes.at("unet"), 4u);
  EXPECT_EQ(kind.weightBytes.at("vae_decoder"), 2u);
  parseWeightsSpec("f16,conv=f32", "--weights", e);
  EXPECT_EQ(fitRequest(e, 2, 64, 64).weightBytes.at("vae_decoder"), 4u);
  // Quantized weights count as 2 bytes (their f16 biases and norms), not as f32.
  parseWeightsSpec("int4,text_encoder=int8", "--weights", e);
  for (const char* c : {"text_encoder", "unet", "vae_decoder"})
    EXPECT_EQ(fitRequest(e, 2, 64, 64).weightBytes.at(c), 2u) << c;
  parseWeightsSpec("int8,unet.attn=f32", "--weights", e);
  EXPECT_EQ(fitRequest(e, 2, 64, 64).weightBytes.at("unet"), 4u);
  const ModelConfigs m = configs(kSd15);
  EXPECT_EQ(refusal(m, f16, capacity(2ull << 30, 64ull << 30)), "");
  EXPECT_NE(refusal(m, kind, capacity(2ull << 30, 64ull << 30)), "");
}

// The value to blame is the one whose reduction would make the run fit.
TEST(MemoryCheck, NamesTheKeyOrFlag) {
  ModelConfigs m = configs(kA);
  const MemoryCapacity cap = capacity(16ull << 30, 16ull << 30);
  EXPECT_EQ(refusal(m, request(16), cap), "");
  m.unet.layersPerBlock = 1000000000;
  std::string e = refusal(m, request(16), cap);
  EXPECT_CONTAINS(e, m.unet.path + ": layers_per_block: 1000000000 makes the unet need");
  m = configs(kA);
  m.vae.layersPerBlock = 1000000000;
  EXPECT_CONTAINS(refusal(m, request(16), cap), m.vae.path + ": layers_per_block: 1000000000");
  m = configs(kA);
  m.clip.vocab = 1000000000000;
  EXPECT_CONTAINS(refusal(m, request(16), cap), m.clip.path + ": vocab_size: 1000000000000");
  m = configs(kA);
  m.clip.layers = 100000000000;
  EXPECT_CONTAINS(refusal(m, request(16), cap), "num_hidden_layers: 100000000000 makes the text_encoder need");
  m = configs(kA);
  m.unet.blockOut = {32, 64000000};
  EXPECT_CONTAINS(refusal(m, request(16), cap), "block_out_channels: [32, 64000000]");
  // tiny-sd-a's VAE upscales 2x: latent 16384 is -W/-H 32768.
  e = refusal(configs(kA), request(16384), cap);
  EXPECT_CONTAINS(e, "-W 32768 -H 32768 makes the");
  // Graphs alone (sdspeed shapes) cost host bookkeeping only: any batch and size.
  FitRequest shapes = request(16384, 1000000);
  shapes.graphsOnly = true;
  EXPECT_EQ(refusal(configs(kA), shapes, cap), "");
  m = configs(kA);
  m.unet.layersPerBlock = 1000000000;
  EXPECT_CONTAINS(refusal(m, shapes, cap), "of host memory");
}

// Config errors name the file and the key (issue #19: "sizes must be positive" named neither).
TEST(ModelConfig, SizeErrorsNameTheKey) {
  sdspeed_test::TempDir dir;
  auto refusal = [&](const std::string& name, const std::string& json, auto load) {
    const std::string path = dir.path() + "/" + name;
    std::ofstream(path) << json;
    try {
      load(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_CONTAINS(refusal("clip.json", R"({"num_hidden_layers": 0})", loadClipConfig),
                  dir.path() + "/clip.json: num_hidden_layers must be positive, got 0");
  EXPECT_CONTAINS(refusal("clip2.json", R"({"vocab_size": -3})", loadClipConfig), "vocab_size must be positive, got -3");
  // 2^(blocks - 1) is the latent factor: more than 16 blocks is refused, not overflowed.
  std::string blocks = "[";
  for (int i = 0; i < 17; ++i) blocks += std::string(i ? "," : "") + "32";
  blocks += "]";
  EXPECT_CONTAINS(refusal("vae.json", R"({"block_out_channels": )" + blocks + "}", loadVaeConfig),
                  "block_out_channels has 17 blocks; at most 16");
}

}  // namespace
}  // namespace sdspeed
