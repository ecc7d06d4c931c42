// pipeline/weights.*: the tiny-sd-a folder and its single-file LDM copy give the same
// tensors bit for bit through the key map (and a wrong map entry is caught), the map
// generated for SD 1.5's configs has diffusers' key and parameter counts, errors name
// file and tensor, F16/BF16 widen exactly, random weights are deterministic.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "pipeline/gguf.h"
#include "pipeline/safetensors.h"
#include "pipeline/weights.h"
#include "runtime/atomic_file.h"
#include "runtime/quant/quant.h"
#include "test_support.h"

using namespace sdspeed;
using nlohmann::json;
using sdspeed_test::errorMessage;
using sdspeed_test::Half;
using sdspeed_test::TempDir;
using Shape = std::vector<int64_t>;

namespace {

const std::string kTiny = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
const std::string kSingle = kTiny + "/single_file/model.safetensors";
const std::string kSd15 = std::string(SDSPEED_SOURCE_DIR) + "/configs/models/sd15";

json readJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return json::parse(in);
}
const json& tinyUnet() {
  static const json j = readJson(kTiny + "/unet/config.json");
  return j;
}
const json& tinyVae() {
  static const json j = readJson(kTiny + "/vae/config.json");
  return j;
}

std::string folderFile(const std::string& component) {
  return kTiny + "/" + component + (component == "text_encoder" ? "/model.safetensors" : "/diffusion_pytorch_model.safetensors");
}

// Every tensor of the folder file (the reference), loaded from `source` with the folder's
// shape: the names whose bytes differ (or that fail to load).
std::vector<std::string> differences(const std::string& component, const WeightSource& source) {
  SafetensorsFile ref(folderFile(component));
  std::vector<std::string> bad;
  for (const TensorInfo& t : ref.tensors()) {
    // The text encoder is asked for by its canonical name (the fixture's file lacks "text_model.").
    const std::string name = component == "text_encoder" ? "text_model." + t.name : t.name;
    std::vector<float> want = ref.toFloat(t.name);
    try {
      std::vector<float> got = source.load(name, t.shape);
      if (got.size() != want.size() || std::memcmp(got.data(), want.data(), want.size() * 4) != 0)
        bad.push_back(name);
    } catch (const Error& e) {
      bad.push_back(name + " (" + e.what() + ")");
    }
  }
  return bad;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::map<std::string, LdmKey> byDiffusers(const std::vector<LdmKey>& keys) {
  std::map<std::string, LdmKey> out;
  for (const LdmKey& k : keys) EXPECT_TRUE(out.emplace(k.diffusers, k).second) << "twice: " << k.diffusers;
  return out;
}

}  // namespace

TEST(Weights, FolderSourceReadsTheFixture) {
  auto unet = openFolderWeights(kTiny, "unet");
  EXPECT_EQ(unet->describe(), folderFile("unet"));
  EXPECT_EQ(unet->names().size(), 304u);
  EXPECT_TRUE(unet->has("down_blocks.0.resnets.0.conv1.weight"));
  EXPECT_FALSE(unet->has("down_blocks.9.resnets.0.conv1.weight"));
  EXPECT_EQ(unet->diskDType("conv_in.weight"), "F32");
  std::vector<float> w = unet->load("conv_in.weight", {32, 4, 3, 3});
  EXPECT_EQ(w, SafetensorsFile(folderFile("unet")).toFloat("conv_in.weight"));

  // transformers 5.x saved the fixture's CLIP without "text_model.": both spellings work.
  auto text = openFolderWeights(kTiny, "text_encoder");
  EXPECT_TRUE(text->has("text_model.encoder.layers.0.self_attn.q_proj.weight"));
  EXPECT_TRUE(text->has("encoder.layers.0.self_attn.q_proj.weight"));
  EXPECT_EQ(text->names().front(), "text_model.embeddings.position_embedding.weight");
  EXPECT_EQ(text->load("text_model.final_layer_norm.weight", {32}), text->load("final_layer_norm.weight", {32}));
}

// The single file through the map gives every folder tensor bit for bit, and no more.
TEST(Weights, SingleFileMatchesFolderBitExact) {
  for (const std::string component : {"unet", "vae", "text_encoder"}) {
    SCOPED_TRACE(component);
    auto single = openSingleFileWeights(kSingle, component, tinyUnet(), tinyVae());
    auto folder = openFolderWeights(kTiny, component);
    EXPECT_EQ(differences(component, *single), std::vector<std::string>{});
    EXPECT_EQ(single->names(), folder->names());  // nothing missing, nothing extra
    EXPECT_CONTAINS(single->describe(), kSingle);
  }
  // The VAE mid attention: LDM 1x1 conv [64, 64, 1, 1] read as diffusers' Linear [64, 64].
  SafetensorsFile f(kSingle);
  EXPECT_EQ(f.info("first_stage_model.decoder.mid.attn_1.q.weight").shape, (Shape{64, 64, 1, 1}));
  auto vae = openSingleFileWeights(kSingle, "vae", tinyUnet(), tinyVae());
  EXPECT_EQ(vae->load("decoder.mid_block.attentions.0.to_q.weight", {64, 64}).size(), 64u * 64u);
}

// The test above can fail: a map entry pointing at another tensor of the same shape
// (what a wrong index or a swapped q/k would do) opens fine but differs in the bytes.
TEST(Weights, WrongMapEntryIsCaught) {
  std::vector<LdmKey> keys = ldmUnetKeyMap(tinyUnet());
  const std::string q = "down_blocks.0.attentions.0.transformer_blocks.0.attn1.to_q.weight";
  const std::string k = "down_blocks.0.attentions.0.transformer_blocks.0.attn1.to_k.weight";
  LdmKey *kq = nullptr, *kk = nullptr;
  for (LdmKey& e : keys) {
    if (e.diffusers == q) kq = &e;
    if (e.diffusers == k) kk = &e;
  }
  ASSERT_TRUE(kq && kk);
  std::swap(kq->ldm, kk->ldm);
  std::vector<std::string> diff = differences("unet", *openSingleFileWeightsWithMap(kSingle, "unet", keys));
  std::sort(diff.begin(), diff.end());
  EXPECT_EQ(diff, (std::vector<std::string>{k, q}));

  // Resnet 1 of up block 1 read from output block 3 instead of 4: shapes differ (96 vs 64
  // input channels), so opening already fails, naming file and tensors.
  keys = ldmUnetKeyMap(tinyUnet());
  for (LdmKey& e : keys)
    if (e.diffusers.starts_with("up_blocks.1.resnets.1."))
      e.ldm.replace(e.ldm.find("output_blocks.4."), 16, "output_blocks.3.");
  std::string msg = errorMessage([&] { openSingleFileWeightsWithMap(kSingle, "unet", keys); });
  EXPECT_CONTAINS(msg, kSingle);
  EXPECT_CONTAINS(msg, "up_blocks.1.resnets.1.conv1.weight");
}

// The generated maps' shapes are the fixture's diffusers shapes; totals as in its README.
TEST(Weights, TinyMapShapesAndCounts) {
  for (const std::string component : {"unet", "vae"}) {
    SCOPED_TRACE(component);
    std::vector<LdmKey> keys = component == "unet" ? ldmUnetKeyMap(tinyUnet()) : ldmVaeKeyMap(tinyVae());
    SafetensorsFile ref(folderFile(component));
    EXPECT_EQ(keys.size(), ref.tensors().size());
    int64_t params = 0;
    for (const LdmKey& k : keys) {
      ASSERT_TRUE(ref.contains(k.diffusers)) << k.diffusers;
      EXPECT_EQ(ref.info(k.diffusers).shape, k.shape) << k.diffusers;
      params += numel(k.shape);
    }
    EXPECT_EQ(params, component == "unet" ? 1106212 : 658375);
  }
}

// SD 1.5: diffusers' UNet2DConditionModel state dict has 686 tensors and 859,520,964
// parameters, AutoencoderKL 248 tensors and 83,653,863 parameters (counted by module:
// UNet = 10 (conv_in, time embedding, norm/conv out) + 246 down + 46 mid + 384 up).
TEST(Weights, Sd15MapCounts) {
  const json unetCfg = readJson(kSd15 + "/unet/config.json");
  const json vaeCfg = readJson(kSd15 + "/vae/config.json");
  const auto unet = ldmUnetKeyMap(unetCfg);
  const auto vae = ldmVaeKeyMap(vaeCfg);
  EXPECT_EQ(unet.size(), 686u);
  EXPECT_EQ(vae.size(), 248u);
  int64_t unetParams = 0, vaeParams = 0;
  for (const LdmKey& k : unet) unetParams += numel(k.shape);
  for (const LdmKey& k : vae) vaeParams += numel(k.shape);
  EXPECT_EQ(unetParams, 859520964);
  EXPECT_EQ(vaeParams, 83653863);

  // Names unique on both sides; a few known pairs from SD 1.5 checkpoints.
  const auto u = byDiffusers(unet);
  std::set<std::string> ldm;
  for (const LdmKey& k : unet) EXPECT_TRUE(ldm.insert(k.ldm).second) << k.ldm;
  const std::string P = "model.diffusion_model.";
  const std::pair<const char*, const char*> pairs[] = {
      {"down_blocks.2.downsamplers.0.conv.weight", "input_blocks.9.0.op.weight"},
      {"down_blocks.3.resnets.1.conv2.weight", "input_blocks.11.0.out_layers.3.weight"},
      {"down_blocks.1.attentions.1.transformer_blocks.0.attn2.to_k.weight",
       "input_blocks.5.1.transformer_blocks.0.attn2.to_k.weight"},
      {"mid_block.attentions.0.proj_out.weight", "middle_block.1.proj_out.weight"},
      {"up_blocks.0.upsamplers.0.conv.weight", "output_blocks.2.1.conv.weight"},
      {"up_blocks.1.upsamplers.0.conv.weight", "output_blocks.5.2.conv.weight"},
      {"up_blocks.3.attentions.2.norm.bias", "output_blocks.11.1.norm.bias"},
      {"up_blocks.3.resnets.0.conv_shortcut.weight", "output_blocks.9.0.skip_connection.weight"}};
  for (const auto& [d, l] : pairs) {
    ASSERT_TRUE(u.count(d)) << d;
    EXPECT_EQ(u.at(d).ldm, P + l);
  }
  EXPECT_EQ(u.at("down_blocks.1.attentions.1.transformer_blocks.0.attn2.to_k.weight").shape, (Shape{640, 768}));
  EXPECT_EQ(u.at("up_blocks.3.resnets.0.conv1.weight").shape, (Shape{320, 960, 3, 3}));
  EXPECT_EQ(u.at("time_embedding.linear_1.weight").shape, (Shape{1280, 320}));

  const auto v = byDiffusers(vae);
  EXPECT_EQ(v.at("decoder.up_blocks.0.resnets.0.conv1.weight").ldm, "first_stage_model.decoder.up.3.block.0.conv1.weight");
  EXPECT_EQ(v.at("decoder.up_blocks.3.resnets.0.conv_shortcut.weight").ldm,
            "first_stage_model.decoder.up.0.block.0.nin_shortcut.weight");
  EXPECT_EQ(v.at("encoder.mid_block.attentions.0.to_out.0.weight").ldm, "first_stage_model.encoder.mid.attn_1.proj_out.weight");
  EXPECT_TRUE(v.at("encoder.mid_block.attentions.0.to_out.0.weight").convToLinear);
  EXPECT_EQ(v.at("decoder.up_blocks.3.resnets.0.conv_shortcut.weight").shape, (Shape{128, 256, 1, 1}));
}

TEST(Weights, UnsupportedConfigsAreErrors) {
  json cfg = tinyUnet();
  cfg["down_block_types"][1] = "SimpleDownBlock2D";
  EXPECT_CONTAINS(errorMessage([&] { ldmUnetKeyMap(cfg); }), "SimpleDownBlock2D");
  cfg = tinyUnet();
  cfg["class_embed_type"] = "timestep";
  EXPECT_CONTAINS(errorMessage([&] { ldmUnetKeyMap(cfg); }), "class_embed_type");
  cfg = tinyUnet();
  cfg["use_linear_projection"] = nullptr;  // null is the default (false), as diffusers reads it
  EXPECT_EQ(ldmUnetKeyMap(cfg).size(), 304u);
  cfg["use_linear_projection"] = "yes";
  EXPECT_CONTAINS(errorMessage([&] { ldmUnetKeyMap(cfg); }), "use_linear_projection");
  cfg = tinyUnet();
  cfg.erase("block_out_channels");
  EXPECT_CONTAINS(errorMessage([&] { ldmUnetKeyMap(cfg); }), "block_out_channels");
}

TEST(Weights, NothingUnmappedButDocumentedExtras) {
  EXPECT_EQ(unmappedSingleFileTensors(kSingle, tinyUnet(), tinyVae()), std::vector<std::string>{});

  TempDir dir;
  const std::string path = dir.path() + "/extras.safetensors";
  SafetensorsWriter w;
  const float one[1] = {1};
  for (const char* name : {"model_ema.decay", "model_ema.diffusion_modelinput_blocks00weight", "betas",
                           "alphas_cumprod", "cond_stage_model.transformer.text_model.embeddings.position_ids",
                           "first_stage_model.loss.logvar", "model.diffusion_model.input_blocks.0.0.weight",
                           "model.diffusion_model.label_emb.0.0.weight", "first_stage_model.encoder.extra"})
    w.add(name, {1}, one);
  w.write(path);
  EXPECT_EQ(unmappedSingleFileTensors(path, tinyUnet(), tinyVae()),
            (std::vector<std::string>{"first_stage_model.encoder.extra", "model.diffusion_model.label_emb.0.0.weight"}));
}

TEST(Weights, ErrorsNameFileAndTensor) {
  auto unet = openFolderWeights(kTiny, "unet");
  const std::string file = folderFile("unet");
  std::string msg = errorMessage([&] { unet->load("down_blocks.7.resnets.0.conv1.weight", {1}); });
  EXPECT_CONTAINS(msg, file);
  EXPECT_CONTAINS(msg, "down_blocks.7.resnets.0.conv1.weight");
  EXPECT_CONTAINS(errorMessage([&] { unet->diskDType("nope.weight"); }), "nope.weight");

  msg = errorMessage([&] { unet->load("conv_in.weight", {32, 4, 1, 1}); });
  EXPECT_CONTAINS(msg, file);
  EXPECT_CONTAINS(msg, "conv_in.weight");
  EXPECT_CONTAINS(msg, "[32, 4, 3, 3]");
  EXPECT_CONTAINS(msg, "[32, 4, 1, 1]");

  auto single = openSingleFileWeights(kSingle, "vae", tinyUnet(), tinyVae());
  msg = errorMessage([&] { single->load("decoder.conv_in.weight", {64, 4, 3}); });
  EXPECT_CONTAINS(msg, kSingle);
  EXPECT_CONTAINS(msg, "decoder.conv_in.weight");
  EXPECT_CONTAINS(msg, "first_stage_model.decoder.conv_in.weight");
  EXPECT_CONTAINS(msg, "[64, 4, 3, 3]");
  EXPECT_CONTAINS(msg, "[64, 4, 3]");
  msg = errorMessage([&] { single->load("decoder.up_blocks.5.resnets.0.conv1.weight", {1}); });
  EXPECT_CONTAINS(msg, kSingle);
  EXPECT_CONTAINS(msg, "decoder.up_blocks.5.resnets.0.conv1.weight");

  // A config that does not describe the checkpoint fails when opening.
  msg = errorMessage([&] { openSingleFileWeights(kSingle, "unet", readJson(kSd15 + "/unet/config.json"), tinyVae()); });
  EXPECT_CONTAINS(msg, kSingle);
  EXPECT_CONTAINS(msg, "does not match");

  EXPECT_CONTAINS(errorMessage([&] { openFolderWeights(kTiny, "tokenizer"); }), "tokenizer");
  TempDir empty;
  EXPECT_CONTAINS(errorMessage([&] { openFolderWeights(empty.path(), "vae"); }), empty.path() + "/vae/");
  // The safetensors validation still applies (a truncated file).
  std::filesystem::create_directories(empty.path() + "/unet");
  std::string bytes;
  ASSERT_TRUE(readFile(file, bytes));
  std::ofstream(empty.path() + "/unet/diffusion_pytorch_model.safetensors", std::ios::binary)
      << bytes.substr(0, bytes.size() - 100);
  EXPECT_CONTAINS(errorMessage([&] { openFolderWeights(empty.path(), "unet"); }),
                  empty.path() + "/unet/diffusion_pytorch_model.safetensors");
}

// F16 and BF16 on disk widen exactly: every one of the 65536 bit patterns, checked
// against the compiler's _Float16 and the bf16 definition (the top half of a float).
TEST(Weights, HalfPrecisionWidensExactly) {
  std::vector<uint16_t> bits(65536);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/unet");
  SafetensorsWriter w;
  w.add("h.weight", {256, 256}, StDType::F16, bits);
  w.add("b.weight", {256, 256}, StDType::BF16, bits);
  w.add("ids", {1}, std::vector<int64_t>{7});
  w.write(dir.path() + "/unet/diffusion_pytorch_model.fp16.safetensors");  // only the variant name exists

  auto src = openFolderWeights(dir.path(), "unet");
  EXPECT_CONTAINS(src->describe(), "diffusion_pytorch_model.fp16.safetensors");
  EXPECT_EQ(src->diskDType("h.weight"), "F16");
  EXPECT_EQ(src->diskDType("b.weight"), "BF16");
  std::vector<float> h = src->load("h.weight", {256, 256});
  std::vector<float> b = src->load("b.weight", {256, 256});
  int checked = 0;
  for (size_t i = 0; i < bits.size(); ++i) {
    float want = static_cast<float>(std::bit_cast<Half>(bits[i]));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(h[i])) << i;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(h[i]), std::bit_cast<uint32_t>(want)) << "f16 pattern " << i;
      ASSERT_EQ(std::bit_cast<uint16_t>(static_cast<Half>(h[i])), bits[i]);  // round trip
      ++checked;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(b[i]), static_cast<uint32_t>(bits[i]) << 16) << "bf16 pattern " << i;
  }
  EXPECT_EQ(checked, 65536 - 2 * 1023);  // all but the NaNs
  std::string msg = errorMessage([&] { src->load("ids", {1}); });
  EXPECT_CONTAINS(msg, "I64");
  EXPECT_CONTAINS(msg, "'ids'");
}

TEST(Weights, RandomWeightsDeterministicAndOrderIndependent) {
  const Shape conv{320, 320, 3, 3};
  auto a = randomWeights(42, "unet");
  std::vector<float> x1 = a->load("down_blocks.0.resnets.0.conv1.weight", conv);
  std::vector<float> y1 = a->load("down_blocks.0.resnets.0.conv1.bias", {320});
  auto b = randomWeights(42, "unet");  // the other order, from a fresh source
  std::vector<float> y2 = b->load("down_blocks.0.resnets.0.conv1.bias", {320});
  std::vector<float> x2 = b->load("down_blocks.0.resnets.0.conv1.weight", conv);
  EXPECT_EQ(x1, x2);
  EXPECT_EQ(y1, y2);
  EXPECT_NE(randomWeights(43, "unet")->load("down_blocks.0.resnets.0.conv1.bias", {320}), y1);
  EXPECT_NE(a->load("down_blocks.0.resnets.1.conv1.bias", {320}), y1);
  EXPECT_NE(randomWeights(42, "vae")->load("down_blocks.0.resnets.0.conv1.bias", {320}), y1);
  EXPECT_TRUE(a->has("anything"));
  EXPECT_EQ(a->diskDType("anything"), "random");

  // The threaded fill of a big tensor agrees with the single-threaded one of a small one.
  std::vector<float> big = a->load("big.bias", {3000001});
  std::vector<float> small = a->load("big.bias", {11});
  EXPECT_EQ(std::vector<float>(big.begin(), big.begin() + 11), small);
  EXPECT_EQ(big.back(), a->load("big.bias", {3000001}).back());

  // The rule's scales, measured.
  auto stats = [](const std::vector<float>& v) {
    double s = 0, s2 = 0;
    for (float f : v) {
      EXPECT_TRUE(std::isfinite(f));
      s += f;
      s2 += double(f) * f;
    }
    double mean = s / v.size();
    return std::pair{mean, std::sqrt(s2 / v.size() - mean * mean)};
  };
  auto [mx, sx] = stats(x1);
  EXPECT_NEAR(mx, 0, 0.002);
  EXPECT_NEAR(sx, 1 / std::sqrt(2880.0), 0.01 / std::sqrt(2880.0) * 3);
  auto [mb, sb] = stats(big);
  EXPECT_NEAR(mb, 0, 1e-4);
  EXPECT_NEAR(sb, 0.01, 1e-4);
  auto [mn, sn] = stats(a->load("mid_block.resnets.0.norm1.weight", {100000}));
  EXPECT_NEAR(mn, 1, 1e-3);
  EXPECT_NEAR(sn, 0.02, 1e-3);
  auto t = randomWeights(1, "text_encoder");
  auto [me, se] = stats(t->load("text_model.embeddings.token_embedding.weight", {49408, 8}));
  EXPECT_NEAR(me, 0, 1e-3);
  EXPECT_NEAR(se, 0.02, 2e-4);
  EXPECT_EQ(randomInit("time_embedding.linear_1.weight", {1280, 320}).std, static_cast<float>(1 / std::sqrt(320.0)));
  EXPECT_CONTAINS(errorMessage([] { randomWeights(1, "clip"); }), "clip");
}

// GGUF (pipeline/gguf.h) on the tiny-sd-a fixture gguf-py wrote
// (scripts/fixtures/make_tiny_gguf.py): shapes in PyTorch order, per-tensor types, and the
// Q8_0 bytes identical to sdspeed's quantizer on the single file's f32 values (the block
// layout checked against gguf-py on real weights). Bad files: one Error naming the file.
TEST(Gguf, ReadsTheTinyFixtureAndItsBlocks) {
  const std::string dir = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
  sdspeed::GgufFile g(dir + "/tiny-sd-a-q8_0.gguf");
  sdspeed::SafetensorsFile st(dir + "/single_file/model.safetensors");
  int q8 = 0, f16 = 0, f32 = 0;
  for (const auto& t : g.tensors()) {
    SCOPED_TRACE(t.name);
    ASSERT_TRUE(st.contains(t.name));
    EXPECT_EQ(t.shape, st.info(t.name).shape);
    const auto want = st.toFloat(t.name);
    const auto got = g.toFloat(t);
    ASSERT_EQ(got.size(), want.size());
    if (t.typeName() == "Q8_0") {
      ++q8;
      const sdspeed::quant::MatrixLayout l{sdspeed::quant::Format::Q8_0, t.shape[0], t.shape[1]};
      const auto mine = sdspeed::quant::quantizeMatrix(l, want.data(), want.size(), t.name);
      const auto theirs = g.bytes(t);
      ASSERT_EQ(mine.size(), theirs.size());
      EXPECT_EQ(std::memcmp(mine.data(), theirs.data(), mine.size()), 0);
      EXPECT_EQ(got, sdspeed::quant::dequantizeMatrix(l, mine.data(), mine.size(), t.name));
    } else if (t.typeName() == "F16") {
      ++f16;
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], std::fabs(want[i]) * 1e-3 + 1e-7);
    } else {
      ++f32;
      EXPECT_EQ(got, want);
    }
  }
  EXPECT_GT(q8, 0);
  EXPECT_GT(f16, 0);
  EXPECT_GT(f32, 0);

  sdspeed_test::TempDir tmp;
  std::string bytes;
  {
    std::ifstream in(dir + "/tiny-sd-a-q8_0.gguf", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto bad = [&](const std::string& name, const std::string& content, const std::string& phrase) {
    const std::string path = tmp.path() + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    const std::string msg = sdspeed_test::errorMessage([&] { sdspeed::GgufFile f(path); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(phrase), std::string::npos) << msg;
  };
  bad("short.gguf", bytes.substr(0, bytes.size() / 2), "past the end");
  bad("header.gguf", bytes.substr(0, 4000), "past the end");  // inside the tensor infos
  bad("counts.gguf", bytes.substr(0, 200), "impossible tensor or key-value count");
  bad("magic.gguf", "GGUX" + bytes.substr(4), "magic");
  std::string v9 = bytes;
  v9[4] = 9;
  bad("version.gguf", v9, "version 9");
}
