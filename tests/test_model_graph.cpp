// The model graphs without a device: SD 1.5's real UNet and VAE decoder graphs from
// configs/models/sd15 (op counts that are facts of the architecture), the activation
// lifetimes the executor plans from, and every planner strategy on those graphs (no
// two tensors alive together overlap; greedy-by-size never above naive and within
// 1.5x of the lower bound).
#include <gtest/gtest.h>

#include <map>

#include "pipeline/exec/graph_executor.h"
#include "pipeline/exec/weight_kinds.h"
#include "pipeline/model/sd_graphs.h"
#include "pipeline/run/model_shapes.h"
#include "pipeline/run/sd_pipeline.h"
#include "pipeline/weights.h"
#include "test_support.h"

namespace sdspeed {
namespace {

const std::string kSd15 = std::string(SDSPEED_SOURCE_DIR) + "/configs/models/sd15";

std::map<std::string, int> familyCounts(const Graph& g) {
  std::map<std::string, int> n;
  for (const auto& node : g.nodes()) ++n[node.family->name()];
  return n;
}

struct Sd15 : ::testing::Test {
  UNetConfig unet = loadUNetConfig(kSd15 + "/unet/config.json");
  VaeConfig vae = loadVaeConfig(kSd15 + "/vae/config.json");
  ClipConfig clip = loadClipConfig(kSd15 + "/text_encoder/config.json");
};

TEST_F(Sd15, GraphsHaveTheArchitecturesOps) {
  const auto u = familyCounts(buildUNetGraph(unet, 2, 64, 64, 77));
  EXPECT_EQ(u.at("attention"), 32);  // 16 transformer blocks, self + cross attention each
  EXPECT_EQ(u.at("concat"), 12);     // the 12 skip connections of the up path
  EXPECT_EQ(u.at("upsample"), 3);
  EXPECT_EQ(u.at("layernorm"), 48);  // 3 per transformer block
  const auto v = familyCounts(buildVaeDecoderGraph(vae, 1, 64, 64));
  EXPECT_EQ(v.at("attention"), 1);   // the mid block's single-head attention
  EXPECT_EQ(v.at("upsample"), 3);
  const auto t = familyCounts(buildTextEncoderGraph(clip, 2, 77, "text_model."));
  EXPECT_EQ(t.at("attention"), 12);  // 12 layers
  EXPECT_EQ(t.at("layernorm"), 25);  // 2 per layer + the final one
}

// The UNet's steady ops (those that read only the text context and weights) are exactly
// the 16 cross-attentions' K and V projections, in the graph and in the shape list that
// `tune --model` weighs (their runs once per image); the other components have none.
TEST_F(Sd15, SteadyNodesAreTheCrossAttentionsKAndV) {
  const Graph g = buildUNetGraph(unet, 2, 64, 64, 77);
  const std::vector<bool> steady = g.steadyNodes();
  ASSERT_EQ(steady.size(), g.nodes().size());
  int n = 0;
  for (size_t i = 0; i < steady.size(); ++i) {
    const std::string& label = g.nodes()[i].label;
    const bool kv = label.find("attn2.to_k") != std::string::npos || label.find("attn2.to_v") != std::string::npos;
    EXPECT_EQ(bool(steady[i]), kv) << label;
    n += steady[i] ? 1 : 0;
  }
  EXPECT_EQ(n, 32);
  for (bool s : buildVaeDecoderGraph(vae, 1, 64, 64).steadyNodes()) EXPECT_FALSE(s);
  for (bool s : buildTextEncoderGraph(clip, 2, 77, "text_model.").steadyNodes()) EXPECT_FALSE(s);
  int listed = 0;
  for (const auto& e : modelShapes(kSd15, 512, 512, 2)) {
    EXPECT_LE(e.steady, e.count) << e.op << " " << e.shape.text();
    if (e.steady == 0) continue;
    EXPECT_EQ(e.component, "unet");
    EXPECT_EQ(e.op, "gemm");
    EXPECT_EQ(e.shape.text(), "2x768x1x77");  // the text context, K = 768 channels, 77 tokens
    listed += e.steady;
  }
  EXPECT_EQ(listed, 32);
}

// Every GEMM and convolution of SD 1.5 has a layer kind (--weights KIND=FORMAT reaches
// it; nodeWeightKind throws for one it cannot place), in the counts the architecture
// gives, fused or not; ops without a matrix weight have none.
TEST_F(Sd15, EveryMatrixWeightHasALayerKind) {
  auto kinds = [](const Graph& g) {
    std::map<std::string, int> n;
    for (const auto& node : g.nodes()) {
      const std::string k = nodeWeightKind(node);
      const std::string fam = node.family->name();
      EXPECT_EQ(k.empty(), fam != "conv" && fam != "gemm") << node.label;
      if (!k.empty()) ++n[k];
    }
    return n;
  };
  for (const bool fuse : {true, false}) {
    SCOPED_TRACE(fuse ? "fused" : "unfused");
    const GraphOptions o{fuse};
    const auto u = kinds(buildUNetGraph(unet, 2, 64, 64, 77, o));
    EXPECT_EQ(u.at("attn"), 128);       // 16 transformer blocks x (attn1 + attn2) x q, k, v, out
    EXPECT_EQ(u.at("ff"), 32);          // GEGLU proj + ff.net.2 per block
    EXPECT_EQ(u.at("proj"), 32);        // proj_in + proj_out per transformer
    EXPECT_EQ(u.at("time_embed"), 24);  // linear_1, linear_2 and the 22 resnets' time_emb_proj
    EXPECT_EQ(u.at("conv"), familyCounts(buildUNetGraph(unet, 2, 64, 64, 77, o)).at("conv"));
    const auto t = kinds(buildTextEncoderGraph(clip, 2, 77, "text_model.", o));
    EXPECT_EQ(t, (std::map<std::string, int>{{"attn", 48}, {"ff", 24}}));  // 12 layers: q, k, v, out; fc1, fc2
    const auto v = kinds(buildVaeDecoderGraph(vae, 1, 64, 64, o));
    EXPECT_EQ(v.at("attn"), 4);  // the mid block's single attention
    EXPECT_EQ(v.size(), 2u);     // and convolutions
  }
}

TEST_F(Sd15, UnfusedGraphsSplitTheActivations) {
  const auto fused = familyCounts(buildUNetGraph(unet, 2, 64, 64, 77));
  const auto unfused = familyCounts(buildUNetGraph(unet, 2, 64, 64, 77, GraphOptions{false}));
  // Every GroupNorm+SiLU and every GEMM epilogue (GEGLU, the time embedding's SiLU) gains an
  // activation op; the op counts of the big families stay.
  EXPECT_GT(unfused.at("activation"), fused.at("activation") + 40);
  EXPECT_EQ(unfused.at("conv"), fused.at("conv"));
  EXPECT_EQ(unfused.at("attention"), fused.at("attention"));
}

// Every tensor an op reads or writes is alive at that op in the planner's records, views
// included (their base's record), and the graph's outputs live to the last op.
void expectLifetimesCover(const Graph& g, const StorageFormat& f) {
  const ActivationUsage u = activationUsage(g, f);
  std::map<int, TensorUsage> byTensor;
  for (size_t k = 0; k < u.tensors.size(); ++k) byTensor[u.tensors[k]] = u.records[k];
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (int a : g.nodes()[i].args) {
      if (a < 0 || g.tensor(a).kind != GraphTensor::Kind::Activation) continue;
      const auto it = byTensor.find(g.storageOf(a));
      ASSERT_NE(it, byTensor.end()) << g.nodes()[i].label;
      EXPECT_LE(it->second.firstOp, static_cast<int>(i)) << g.nodes()[i].label;
      EXPECT_GE(it->second.lastOp, static_cast<int>(i)) << g.nodes()[i].label;
      const TensorDesc desc{g.tensor(g.storageOf(a)).shape, f};
      EXPECT_EQ(it->second.bytes, desc.bytes());
    }
  for (const auto& [name, id] : g.outputs())
    EXPECT_EQ(byTensor.at(g.storageOf(id)).lastOp, static_cast<int>(g.nodes().size()) - 1) << name;
}

TEST_F(Sd15, PlannerOnTheRealGraphs) {
  const StorageFormat f = StorageFormat::parse("f16.buffer.nc4hw4");
  for (const Graph& g : {buildUNetGraph(unet, 1, 64, 64, 77), buildVaeDecoderGraph(vae, 1, 64, 64),
                         buildTextEncoderGraph(clip, 1, 77, "text_model.")}) {
    SCOPED_TRACE(g.component());
    expectLifetimesCover(g, f);
    const ActivationUsage u = activationUsage(g, f);
    const uint64_t lower = lowerBoundBytes(u.records);
    uint64_t naive = 0;
    for (PlanStrategy s : allPlanStrategies()) {
      const MemoryPlan p = planMemory(u.records, s, 512);
      validatePlan(u.records, p);  // throws if two tensors alive together overlap
      EXPECT_GE(p.totalBytes(), lower) << planStrategyName(s);
      if (s == PlanStrategy::Naive) naive = p.totalBytes();
      if (s == PlanStrategy::GreedyBySize) {
        EXPECT_LE(p.totalBytes(), naive);
        EXPECT_LE(static_cast<double>(p.totalBytes()), 1.5 * static_cast<double>(lower));
      }
    }
  }
}

// The fixture's files are explained by their configs; a text encoder config with one
// layer fewer than the file is refused naming the first tensor it leaves out, unless
// extra tensors are allowed (--allow-extra-weights).
TEST(WeightsExplained, ExtraTensorsAreRefusedUnlessAllowed) {
  const std::string a = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
  ClipConfig clip = loadClipConfig(a + "/text_encoder/config.json");
  const auto text = openFolderWeights(a, "text_encoder");
  EXPECT_NO_THROW(requireWeightsExplained(buildTextEncoderGraph(clip, 1, clip.positions, ""), *text, "text_encoder", false));
  const auto vae = openFolderWeights(a, "vae");  // its encoder is a known extra
  EXPECT_NO_THROW(requireWeightsExplained(buildVaeDecoderGraph(loadVaeConfig(a + "/vae/config.json"), 1, 8, 8), *vae,
                                          "vae_decoder", false));
  clip.layers -= 1;
  const Graph fewer = buildTextEncoderGraph(clip, 1, clip.positions, "");
  try {
    requireWeightsExplained(fewer, *text, "text_encoder", false);
    FAIL() << "extra layers accepted";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), text->describe());
    EXPECT_CONTAINS(e.what(), "the first 'text_model.encoder.layers." + std::to_string(clip.layers) + ".");
  }
  EXPECT_NO_THROW(requireWeightsExplained(fewer, *text, "text_encoder", true));
}

}  // namespace
}  // namespace sdspeed
