// The pipeline against diffusers: the fixtures tests/data/tiny-sd-a and tiny-sd-b (see
// their READMEs), two different architectures, reproduced through the runner's code
// path (SdPipeline + runDiffusion) on the default device.
//
// Tolerances follow the fixture README's rule for a float32 implementation
// (tests/fixture_compare.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pipeline/quantized_file.h"
#include "pipeline/run/ablation.h"
#include "pipeline/run/quantize_model.h"
#include "pipeline/run/sd_runner.h"
#include "pipeline/safetensors.h"
#include "runtime/opencl/device.h"
#include "fixture_compare.h"
#include "test_support.h"

namespace sdspeed {
namespace {

// One fixture folder: its reference tensors, spreads, and a pipeline built from it.
struct Fixture {
  std::string dir;
  int64_t latent = 0;
  std::vector<std::string> schedulers;
  std::unique_ptr<SafetensorsFile> ref;
  nlohmann::json spreads;
  std::unique_ptr<SdPipeline> pipe;

  Spread spread(const std::string& tensor, bool anyStep = false) const {
    const auto& t = spreads.at("tolerances").at(tensor);
    return {t.at(anyStep && t.contains("max_abs_any_step") ? "max_abs_any_step" : "max_abs").get<double>(),
            t.at("rel_l2").get<double>()};
  }
};

Context& context() {
  static Context ctx(selectDevice(listDevices(), ""), ContextOptions{});
  return ctx;
}

// Built once per fixture (programs are shared through the cache) and kept for the
// whole test program.
// "tiny-sd-a/single_file": the same model from its original-format checkpoint.
Fixture& fixture(const std::string& name) {
  context();  // constructed first, so destroyed after every fixture's pipeline
  static std::map<std::string, std::unique_ptr<Fixture>> all;
  auto& f = all[name];
  if (f) return *f;
  f = std::make_unique<Fixture>();
  const bool single = name.find("/single_file") != std::string::npos;
  f->dir = std::string(SDSPEED_TEST_DATA) + "/" + name.substr(0, name.find('/'));
  f->ref = std::make_unique<SafetensorsFile>(f->dir + "/reference.safetensors");
  std::ifstream in(f->dir + "/f32_vs_f64.json");
  f->spreads = nlohmann::json::parse(in);
  const auto shape = f->ref->info("init_latents").shape;
  f->latent = shape.at(2);
  for (const char* s : {"ddim", "pndm", "euler", "dpmpp2m"})
    if (f->ref->contains(std::string(s) + "_final_latents")) f->schedulers.push_back(s);
  ModelSource src;
  src.configDir = f->dir;
  if (single)
    src.singleFile = f->dir + "/single_file/model.safetensors";
  else
    src.weightsDir = f->dir;
  ExecOptions exec;
  exec.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
  f->pipe = std::make_unique<SdPipeline>(context(), src, exec, shape.at(2), shape.at(3), 2);
  return *f;
}

class Diffusers : public ::testing::TestWithParam<std::string> {
 protected:
  Fixture& fx() { return fixture(GetParam()); }
  DiffusionRequest request() {
    DiffusionRequest r;
    r.condIds = fx().ref->toInt64("input_ids_cond");
    r.uncondIds = fx().ref->toInt64("input_ids_uncond");
    r.initLatents = fx().ref->toFloat("init_latents");
    r.steps = 4;
    r.guidance = 7.5f;
    return r;
  }
};

TEST_P(Diffusers, TextEmbeddings) {
  std::vector<int64_t> ids = fx().ref->toInt64("input_ids_uncond");
  const auto cond = fx().ref->toInt64("input_ids_cond");
  ids.insert(ids.end(), cond.begin(), cond.end());
  expectClose(fx().pipe->encodeText(ids), fx().ref->toFloat("text_embeddings"), fx().spread("text_embeddings"),
              GetParam() + " text_embeddings");
}

TEST_P(Diffusers, UNetAtT999) {
  auto x = fx().ref->toFloat("init_latents");
  x.insert(x.end(), x.begin(), x.end());
  const auto out = fx().pipe->predictNoise(x, 999.0f, fx().ref->toFloat("text_embeddings"));
  expectClose(out, fx().ref->toFloat("unet_out_t999"), fx().spread("unet_out_t999"), GetParam() + " unet_out_t999");
}

// Every scheduler the fixture has: timesteps exactly, the latents after every step
// within the scheduler's worst step spread, DDIM decoded too.
TEST_P(Diffusers, SchedulerLoops) {
  for (const std::string& name : fx().schedulers) {
    auto sched = loadScheduler(name, fx().dir + "/scheduler_configs/" + name + ".json");
    DiffusionRequest req = request();
    req.decode = name == "ddim";
    std::vector<std::vector<float>> steps;
    req.onStep = [&](int, const std::vector<float>& l) { steps.push_back(l); };
    const DiffusionResult r = runDiffusion(*fx().pipe, *sched, req);
    const auto ts = fx().ref->toInt64(name + "_timesteps");
    ASSERT_EQ(r.timesteps.size(), ts.size()) << name;
    for (size_t i = 0; i < ts.size(); ++i) EXPECT_EQ(static_cast<int64_t>(r.timesteps[i]), ts[i]) << name;
    const Spread sp = fx().spread(name + "_final_latents", true);
    ASSERT_EQ(steps.size(), ts.size());
    for (size_t i = 0; i < steps.size(); ++i)
      expectClose(steps[i], fx().ref->toFloat(name + "_latents_step" + std::to_string(i)), sp,
                  GetParam() + " " + name + "_latents_step" + std::to_string(i));
    expectClose(r.finalLatents, fx().ref->toFloat(name + "_final_latents"), sp, GetParam() + " " + name + "_final");
    if (req.decode) expectClose(r.decoded, fx().ref->toFloat("decoded_ddim"), fx().spread("decoded_ddim"), GetParam() + " decoded_ddim");
  }
}

TEST_P(Diffusers, VaeDecodeAlone) {
  expectClose(fx().pipe->decode(fx().ref->toFloat("ddim_final_latents")), fx().ref->toFloat("decoded_ddim"),
              fx().spread("decoded_ddim_vae_only"), GetParam() + " decoded (VAE only)");
}

// tiny-sd-a: SD 1.x-like (2 levels, conv projections, 8 heads, quick_gelu CLIP);
// tiny-sd-b: SD 2.x-like (3 levels, linear projections, heads per block, gelu CLIP).
// tiny-sd-a/single_file: the same weights through the LDM key map (must match too).
INSTANTIATE_TEST_SUITE_P(Fixtures, Diffusers, ::testing::Values("tiny-sd-a", "tiny-sd-a/single_file", "tiny-sd-b"),
                         fixtureTestName);

// The memory planner changes where tensors live, never what is computed: every
// strategy (and none) gives bit-identical UNet and VAE outputs, in both layouts.
TEST(Planner, OutputsBitIdenticalWithAndWithoutPlanner) {
  const std::string dir = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
  SafetensorsFile ref(dir + "/reference.safetensors");
  auto x = ref.toFloat("init_latents");
  x.insert(x.end(), x.begin(), x.end());
  const auto ctxTokens = ref.toFloat("text_embeddings");
  for (const char* layout : {"nchw", "nc4hw4"}) {
    std::vector<float> first, firstDecoded;
    // Every strategy in one layout; the arena (greedy-by-size) against none in the other.
    const std::vector<const char*> planners =
        std::string(layout) == "nc4hw4"
            ? std::vector<const char*>{"none", "naive", "equality", "greedy-in-order", "greedy-by-size"}
            : std::vector<const char*>{"none", "greedy-by-size"};
    for (const char* planner : planners) {
      ModelSource src;
      src.configDir = src.weightsDir = dir;
      ExecOptions exec;
      exec.format = StorageFormat::parse(std::string("f32.buffer.") + layout);
      exec.planner = planner;
      exec.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
      SdPipeline pipe(context(), src, exec, 16, 16, 2);
      const auto out = pipe.predictNoise(x, 999.0f, ctxTokens);
      const auto dec = pipe.decode(ref.toFloat("ddim_final_latents"));
      if (first.empty()) {
        first = out;
        firstDecoded = dec;
        expectClose(out, ref.toFloat("unet_out_t999"), {1.328e-06, 6.952e-07}, std::string("unet_out_t999 ") + layout);
        continue;
      }
      EXPECT_EQ(out, first) << layout << " planner " << planner;
      EXPECT_EQ(dec, firstDecoded) << layout << " planner " << planner;
      // The plan is real: the arena is no larger than one buffer per tensor.
      EXPECT_LE(pipe.stats("unet").memory.activationBytes, pipe.stats("unet").memory.planBytes.at("naive") + 4096);
    }
  }
}

// Releasing components changes what the device holds, never what is computed: the
// decoded image is bit-identical with each component freed after use (twice on one
// pipeline: a later use rebuilds it) and with all kept resident. Released, nothing
// on the device outlives a component (embeddings and latents live on the host), so
// the run's peak above what was live before it is exactly the largest component's
// own footprint; resident, the components add up and the peak is higher.
TEST(Residency, ReleasedIsBitIdenticalAndPeaksAtTheLargestComponent) {
  const std::string dir = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
  SafetensorsFile ref(dir + "/reference.safetensors");
  ModelSource src;
  src.configDir = src.weightsDir = dir;
  ExecOptions exec;
  exec.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
  DiffusionRequest req;
  req.condIds = ref.toInt64("input_ids_cond");
  req.uncondIds = ref.toInt64("input_ids_uncond");
  req.initLatents = ref.toFloat("init_latents");
  req.steps = 2;
  const char* components[] = {"text_encoder", "unet", "vae_decoder"};
  Context& ctx = context();
  // Runs the request on `pipe`; returns the decoded image and the peak above what was live before.
  auto runOnce = [&](SdPipeline& pipe, bool keep, uint64_t& peak) {
    auto sched = loadScheduler("ddim", dir + "/scheduler_configs/ddim.json");
    req.keepResident = keep;
    ctx.resetPeak();
    const uint64_t live0 = ctx.memoryStats().liveBytes;
    const DiffusionResult r = runDiffusion(pipe, *sched, req);
    EXPECT_EQ(r.keptResident, keep);
    EXPECT_EQ(r.setup.size(), 3u);
    for (const char* c : components) EXPECT_GT(r.setup.at(c).loadMs, 0.0) << c;
    peak = ctx.memoryStats().peakBytes - live0;
    if (!keep) {
      EXPECT_EQ(ctx.memoryStats().liveBytes, live0) << "released components left bytes behind";
    }
    return r.decoded;
  };

  SdPipeline released(ctx, src, exec, 16, 16, 2);
  uint64_t peakReleased = 0, peakAgain = 0, peakResident = 0;
  const auto decodedReleased = runOnce(released, false, peakReleased);
  uint64_t largest = 0;
  for (const char* c : components) {
    const ComponentStats st = released.stats(c);
    EXPECT_FALSE(st.resident) << c;
    EXPECT_FALSE(released.resident(c)) << c;
    EXPECT_GT(st.deviceBytes, st.memory.weightBytes) << c;  // weights and activations at least
    largest = std::max(largest, st.deviceBytes);
  }
  EXPECT_EQ(peakReleased, largest);
  EXPECT_EQ(runOnce(released, false, peakAgain), decodedReleased);
  EXPECT_EQ(peakAgain, peakReleased);
  for (const char* c : components) EXPECT_EQ(released.stats(c).loads, 2) << c;

  SdPipeline resident(ctx, src, exec, 16, 16, 2);
  const auto decodedResident = runOnce(resident, true, peakResident);
  uint64_t sum = 0;
  for (const char* c : components) {
    EXPECT_TRUE(resident.stats(c).resident) << c;
    sum += resident.stats(c).deviceBytes;
  }
  EXPECT_EQ(decodedResident, decodedReleased);
  EXPECT_LT(peakReleased, peakResident);
  EXPECT_LE(peakResident, sum);  // each footprint includes its own transient load peak
  resident.release("unet");
  EXPECT_FALSE(resident.resident("unet"));
  EXPECT_TRUE(resident.built("unet"));
}

// Half storage (f16 activations, f32 arithmetic): the fixture's rule for fp16
// implementations, relative error ~1e-2.
TEST(HalfStorage, UNetAndTextWithinHalfTolerance) {
  const std::string dir = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
  SafetensorsFile ref(dir + "/reference.safetensors");
  ModelSource src;
  src.configDir = src.weightsDir = dir;
  ExecOptions exec;
  exec.format = StorageFormat::parse("f16.buffer.nc4hw4");
  exec.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
  SdPipeline pipe(context(), src, exec, 16, 16, 2);
  auto x = ref.toFloat("init_latents");
  x.insert(x.end(), x.begin(), x.end());
  const auto out = pipe.predictNoise(x, 999.0f, ref.toFloat("text_embeddings"));
  const auto want = ref.toFloat("unet_out_t999");
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    num += (out[i] - want[i]) * (out[i] - want[i]);
    den += want[i] * want[i];
  }
  EXPECT_LE(std::sqrt(num / den), 1e-2);
  EXPECT_GT(std::sqrt(num / den), 0.0);  // really half storage: not bit-equal to float
}

ModelSource fixtureSource(const std::string& name) {
  ModelSource src;
  const std::string dir = std::string(SDSPEED_TEST_DATA) + "/" + name.substr(0, name.find('/'));
  src.configDir = dir;
  if (name.find("/single_file") != std::string::npos) src.singleFile = dir + "/single_file/model.safetensors";
  else src.weightsDir = dir;
  return src;
}

// f16 weights (rounded to nearest even on upload, f32 arithmetic and activations): each
// fixture's text embeddings, UNet output and decoded image against diffusers' float32
// reference. Measured on PoCL (printed below, 2026-12-03): rel L2 text 7.5e-4 / 6.4e-4,
// unet_out_t999 9.3e-4 / 9.1e-4, decoded 6.7e-4 / 6.1e-4 (tiny-sd-a, single file identical /
// tiny-sd-b): each weight carries a relative error up to 2^-11 = 4.9e-4 and through the
// layers the errors add up roughly in quadrature, not coherently. The bound, 5e-3, is ~5x the
// worst measured (room for other devices' summation orders) and half the fixture README's
// rule for fp16 implementations, 1e-2, which f16 activations are held to (HalfStorage
// below). The f16-weight outputs really differ from the f32-weight ones (not silently f32),
// whose run stays within the f32 rule (the Diffusers suite).
class F16Weights : public ::testing::TestWithParam<std::string> {};

TEST_P(F16Weights, UNetAndDecodedImageWithinHalfTolerance) {
  const std::string name = GetParam();
  const ModelSource src = fixtureSource(name);
  SafetensorsFile ref(src.configDir + "/reference.safetensors");
  const auto shape = ref.info("init_latents").shape;
  auto x = ref.toFloat("init_latents");
  x.insert(x.end(), x.begin(), x.end());
  ExecOptions exec;
  exec.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
  exec.format.weights = DType::F16;
  SdPipeline pipe(context(), src, exec, shape.at(2), shape.at(3), 2);
  const auto text = pipe.encodeText([&] {
    std::vector<int64_t> ids = ref.toInt64("input_ids_uncond");
    const auto cond = ref.toInt64("input_ids_cond");
    ids.insert(ids.end(), cond.begin(), cond.end());
    return ids;
  }());
  const auto out = pipe.predictNoise(x, 999.0f, ref.toFloat("text_embeddings"));
  const auto dec = pipe.decode(ref.toFloat("ddim_final_latents"));
  const double eText = relL2(text, ref.toFloat("text_embeddings"));
  const double eUnet = relL2(out, ref.toFloat("unet_out_t999"));
  const double eDec = relL2(dec, ref.toFloat("decoded_ddim"));
  std::printf("%-24s f16 weights: rel L2 text %.3g, unet_out_t999 %.3g, decoded (VAE only) %.3g\n", name.c_str(), eText,
              eUnet, eDec);
  EXPECT_LE(eText, 5e-3);
  EXPECT_LE(eUnet, 5e-3);
  EXPECT_LE(eDec, 5e-3);
  EXPECT_GT(eUnet, 0.0);
  for (const char* c : {"text_encoder", "unet", "vae_decoder"}) {
    // Every weight is 2 bytes: the weight memory of the f32 run, halved.
    ExecOptions f32 = exec;
    f32.format.weights = DType::F32;
    SdPipeline full(context(), src, f32, shape.at(2), shape.at(3), 2);
    EXPECT_EQ(2 * pipe.stats(c).memory.weightBytes, full.stats(c).memory.weightBytes) << c;
    if (std::string(c) == "vae_decoder") {
      EXPECT_NE(full.decode(ref.toFloat("ddim_final_latents")), dec);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, F16Weights, ::testing::Values("tiny-sd-a", "tiny-sd-a/single_file", "tiny-sd-b"),
                         fixtureTestName);

// int8/int4 weights (ggml's q8_0/q4_0 blocks, quantized at load, kernels/QUANTIZATION.md):
// GEMM's matrices are blocks, every other weight f16 (reported, with the reason). The
// UNet output and the decoded image are compared with the f32-weight run's. Bounds from
// the measurement printed below (PoCL, tiny-sd-a): see the comment at the EXPECTs.
TEST(QuantizedWeights, TinyPipelineInt8AndInt4) {
  const ModelSource src = fixtureSource("tiny-sd-a");
  SafetensorsFile ref(src.configDir + "/reference.safetensors");
  const auto shape = ref.info("init_latents").shape;
  auto x = ref.toFloat("init_latents");
  x.insert(x.end(), x.begin(), x.end());
  const auto emb = ref.toFloat("text_embeddings");
  const auto lat = ref.toFloat("ddim_final_latents");
  ExecOptions f32;
  f32.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
  SdPipeline full(context(), src, f32, shape.at(2), shape.at(3), 2);
  const auto out32 = full.predictNoise(x, 999.0f, emb);
  const auto dec32 = full.decode(lat);
  for (DType q : {DType::Q8_0, DType::Q4_0}) {
    ExecOptions exec = f32;
    exec.format.weights = q;
    SdPipeline pipe(context(), src, exec, shape.at(2), shape.at(3), 2);
    const auto out = pipe.predictNoise(x, 999.0f, emb);
    const auto dec = pipe.decode(lat);
    const double psnr = psnrDb(dec, dec32);  // as `sdspeed ablate` measures it
    const double eUnet = relL2(out, out32);
    std::printf("tiny-sd-a %s weights vs f32 weights: unet_out_t999 rel L2 %.3g, decoded (VAE only) PSNR %.1f dB\n",
                dtypeName(q), eUnet, psnr);
    // Measured (PoCL, 2026-12-04; Linear and conv weights in blocks): int8 rel L2 1.6e-2,
    // PSNR 54.7 dB (psnrDb, clamped as ablate does; 54.6 unclamped); int4 0.25, 29.9 dB.
    // int8's per-weight error is ~0.5% relative (half a step of max/127) and int4's ~8%
    // (max/8), adding up through ~20 layers. The bounds leave 2-2.5x room (PSNR: 45 dB is
    // the int8 target for the decoded image) and still fail if quantization were
    // skipped (rel L2 > 0) or decoded wrongly (a layout or scale mistake gives O(1)
    // errors: rel L2 >= 1).
    EXPECT_GT(eUnet, 0.0);
    EXPECT_LT(eUnet, q == DType::Q8_0 ? 0.04 : 0.5);
    EXPECT_GT(psnr, q == DType::Q8_0 ? 45.0 : 22.0);
    for (const char* c : {"text_encoder", "unet", "vae_decoder"}) {
      const auto& m = pipe.stats(c).memory;
      SCOPED_TRACE(c);
      // Below f16's bytes: int8 ~ 8.5/32 and int4 ~ 4.5/32 of f32 for the blocks, plus
    // f16 biases and norms and the padding of short rows (the tiny models' widths).
    EXPECT_LT(m.weightBytes, full.stats(c).memory.weightBytes / 2);
      uint64_t sum = 0;
      for (const auto& [fmt, g] : m.weightGroups) {
        sum += g.bytes;
        if (fmt.rfind("f16 (", 0) != 0) {  // blocks, or f16 with its reason
          EXPECT_EQ(fmt, dtypeName(q));
        }
      }
      EXPECT_EQ(sum, m.weightBytes);
    }
    // The UNet's Linear and convolution weights are blocks; its GroupNorm affine
    // parameters (no quantized path) and biases (not matrices) stay f16, said so.
    const auto& g = pipe.stats("unet").memory.weightGroups;
    ASSERT_TRUE(g.count(dtypeName(q)));
    EXPECT_GT(g.at(dtypeName(q)).tensors, 0);
    EXPECT_TRUE(g.count(std::string("f16 (groupnorm: no ") + dtypeName(q) + " kernel path)"));
    EXPECT_TRUE(g.count("f16 (conv bias: not a matrix weight)"));
    EXPECT_FALSE(g.count(std::string("f16 (conv: no ") + dtypeName(q) + " kernel path)"));
  }
}

// `sdspeed quantize` writes the blocks once; a run from that folder uploads them as the
// file holds them (no quantizing) and is bit-identical to quantizing at load, per
// component spec (here int8 everywhere, and int4 with the VAE decoder f16). Bad input:
// tests/test_run_cli.cpp.
TEST(QuantizedWeights, QuantizeFileRunsBitIdenticallyToQuantizingAtLoad) {
  namespace fs = std::filesystem;
  const ModelSource src = fixtureSource("tiny-sd-a");
  SafetensorsFile ref(src.configDir + "/reference.safetensors");
  auto x = ref.toFloat("init_latents");
  x.insert(x.end(), x.begin(), x.end());
  const auto emb = ref.toFloat("text_embeddings");
  const auto lat = ref.toFloat("ddim_final_latents");
  for (const std::string spec : {"int8", "int4,vae_decoder=f16", "int4,unet.conv=int8"}) {
    SCOPED_TRACE(spec);
    sdspeed_test::TempDir tmp;
    const std::string out = tmp.path() + "/q";
    {
      ExecOptions q;
      parseWeightsSpec(spec, "--weights", q);
      std::ostringstream log;
      quantizeModel(src, q, out, src.configDir, log);
    }
    {
      SafetensorsFile f(out + "/unet/diffusion_pytorch_model.safetensors");
      EXPECT_EQ(f.metadata().at(kQuantizedVersionKey), kQuantizedVersion);
      int blocks = 0;
      for (const auto& t : f.tensors()) blocks += quantizedTensor(f, t).has_value();
      EXPECT_GT(blocks, 0);
      if (spec == "int4,unet.conv=int8") {  // the kind override reaches the file: per tensor
        EXPECT_EQ(f.metadata().at("sdspeed.weights"), "int4,conv=int8");
        EXPECT_EQ(f.metadata().at(std::string(kQuantizedTensorPrefix) + "conv_in.weight").rfind("q8_0 ", 0), 0u);
        EXPECT_EQ(f.metadata().at(std::string(kQuantizedTensorPrefix) + "conv_out.weight").rfind("q8_0 ", 0), 0u);
        EXPECT_EQ(f.metadata().at(std::string(kQuantizedTensorPrefix) + "time_embedding.linear_1.weight").rfind("q4_0 ", 0), 0u);
      }
    }
    ExecOptions exec;
    exec.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
    parseWeightsSpec(spec, "--weights", exec);
    ModelSource file;
    file.configDir = file.weightsDir = out;
    SdPipeline atLoad(context(), src, exec, 16, 16, 2), fromFile(context(), file, exec, 16, 16, 2);
    std::vector<int64_t> ids = ref.toInt64("input_ids_uncond");
    const auto cond = ref.toInt64("input_ids_cond");
    ids.insert(ids.end(), cond.begin(), cond.end());
    EXPECT_EQ(atLoad.encodeText(ids), fromFile.encodeText(ids));
    EXPECT_EQ(atLoad.predictNoise(x, 999.0f, emb), fromFile.predictNoise(x, 999.0f, emb));
    EXPECT_EQ(atLoad.decode(lat), fromFile.decode(lat));
    for (const char* c : {"text_encoder", "unet", "vae_decoder"}) {
      const auto& m = fromFile.stats(c).memory;
      EXPECT_EQ(m.weightBytes, atLoad.stats(c).memory.weightBytes) << c;
      EXPECT_EQ(atLoad.stats(c).memory.quantizedFromFileBytes, 0u) << c;
      const bool quantized = spec != "int4,vae_decoder=f16" || std::string(c) != "vae_decoder";
      if (quantized) EXPECT_GT(m.quantizedFromFileBytes, 0u) << c;  // uploaded as stored, not re-quantized
      else EXPECT_EQ(m.quantizedFromFileBytes, 0u) << c;
    }
  }
}

// A GGUF file as stable-diffusion.cpp writes them (LDM names; Q8_0 Linears, F16 biases,
// norms and tables, F32 convolutions: scripts/fixtures/make_tiny_gguf.py, gguf-py) runs
// bit-identically to the same weights (tiny-sd-a's single file) quantized at load with
// --weights int8, its Q8_0 tensors uploaded as stored.
TEST(QuantizedWeights, GgufRunsBitIdenticallyToQuantizingAtLoad) {
  const std::string dir = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
  SafetensorsFile ref(dir + "/reference.safetensors");
  auto x = ref.toFloat("init_latents");
  x.insert(x.end(), x.begin(), x.end());
  std::vector<int64_t> ids = ref.toInt64("input_ids_uncond");
  const auto cond = ref.toInt64("input_ids_cond");
  ids.insert(ids.end(), cond.begin(), cond.end());
  ExecOptions exec;
  exec.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
  exec.format.weights = DType::Q8_0;
  ModelSource single, gguf;
  single.configDir = gguf.configDir = dir;
  single.singleFile = dir + "/single_file/model.safetensors";
  gguf.singleFile = dir + "/tiny-sd-a-q8_0.gguf";
  SdPipeline a(context(), single, exec, 16, 16, 2), b(context(), gguf, exec, 16, 16, 2);
  EXPECT_EQ(a.encodeText(ids), b.encodeText(ids));
  EXPECT_EQ(a.predictNoise(x, 999.0f, ref.toFloat("text_embeddings")),
            b.predictNoise(x, 999.0f, ref.toFloat("text_embeddings")));
  EXPECT_EQ(a.decode(ref.toFloat("ddim_final_latents")), b.decode(ref.toFloat("ddim_final_latents")));
  for (const char* c : {"text_encoder", "unet", "vae_decoder"}) {
    EXPECT_EQ(a.stats(c).memory.weightBytes, b.stats(c).memory.weightBytes) << c;
    EXPECT_EQ(a.stats(c).memory.quantizedFromFileBytes, 0u) << c;
  }
  EXPECT_GT(b.stats("unet").memory.quantizedFromFileBytes, 0u);
  EXPECT_GT(b.stats("text_encoder").memory.quantizedFromFileBytes, 0u);
}

// --weights f16,vae_decoder=f32: the VAE decoder's weights stay f32, so its output is the
// f32 run's bit for bit; the UNet's are f16. The spec parser names --weights on bad input.
TEST(F16WeightSpec, PerComponentOverrideAndSpecErrors) {
  const ModelSource src = fixtureSource("tiny-sd-a");
  SafetensorsFile ref(src.configDir + "/reference.safetensors");
  ExecOptions base;
  base.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
  ExecOptions mixed = base;
  parseWeightsSpec("f16,vae_decoder=f32", "--weights", mixed);
  EXPECT_EQ(mixed.format.weights, DType::F16);
  EXPECT_EQ(componentWeightFormat(mixed, "vae_decoder"), DType::F32);
  EXPECT_EQ(componentWeightFormat(mixed, "unet"), DType::F16);
  EXPECT_EQ(weightsSpecText(mixed), "f16,vae_decoder=f32");
  EXPECT_EQ(weightsSpecText(base), "f32");
  SdPipeline a(context(), src, base, 16, 16, 2), b(context(), src, mixed, 16, 16, 2);
  const auto lat = ref.toFloat("ddim_final_latents");
  EXPECT_EQ(a.decode(lat), b.decode(lat));
  EXPECT_EQ(2 * b.stats("unet").memory.weightBytes, a.stats("unet").memory.weightBytes);
  EXPECT_EQ(b.stats("vae_decoder").memory.weightBytes, a.stats("vae_decoder").memory.weightBytes);

  ExecOptions o;
  for (const char* bad : {"f8", "f16,vea_decoder=f32", "f16,unet=bf16", "", "f16,f32"}) {
    const std::string msg = sdspeed_test::errorMessage([&] { parseWeightsSpec(bad, "--weights", o); });
    EXPECT_EQ(msg.rfind("--weights", 0), 0u) << bad << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_NE(sdspeed_test::errorMessage([&] { parseWeightsSpec("f16,vea_decoder=f32", "--weights", o); }).find("vea_decoder"),
            std::string::npos);
}

// --weights KEY=FORMAT with layer kinds: the most specific key wins (component.kind >
// kind > component > default), the spec reads back as text, and bad input is one line
// naming --weights and the bad part.
TEST(WeightKindSpec, PrecedenceTextAndErrors) {
  ExecOptions o;
  parseWeightsSpec("int4,vae_decoder=f16,conv=int8,unet.conv=f32", "--weights", o);
  EXPECT_EQ(weightFormatFor(o, "unet", "conv"), DType::F32);          // component.kind > kind
  EXPECT_EQ(weightFormatFor(o, "vae_decoder", "conv"), DType::Q8_0);  // kind > component
  EXPECT_EQ(weightFormatFor(o, "vae_decoder", "attn"), DType::F16);   // component > default
  EXPECT_EQ(weightFormatFor(o, "text_encoder", "attn"), DType::Q4_0); // the default
  EXPECT_EQ(weightFormatFor(o, "vae_decoder", ""), DType::F16);       // ops of no kind: the component's
  EXPECT_EQ(weightsSpecText(o), "int4,vae_decoder=f16,conv=int8,unet.conv=f32");
  ExecOptions back;
  parseWeightsSpec(weightsSpecText(o), "--weights", back);
  EXPECT_EQ(back.kindWeights, o.kindWeights);
  EXPECT_EQ(back.componentWeights, o.componentWeights);
  // A later parse replaces the kinds too (an ablation row's own spec).
  parseWeightsSpec("int8", "--weights", back);
  EXPECT_TRUE(back.kindWeights.empty());
  EXPECT_EQ(weightsSpecText(back), "int8");

  const std::pair<const char*, const char*> bad[] = {
      {"int4,convv=int8", "convv"},           {"int4,unte.conv=int8", "unte"},
      {"int4,unet.cnv=int8", "cnv"},          {"int4,conv=int3", "int3"},
      {"int4,conv=int8,conv=f16", "conv"},    {"int4,unet=int8,unet=f16", "unet"},
      {"int4,unet.attn=int8,unet.attn=int8", "unet.attn"}, {"int4,int8,conv=f16", "int8"},
      {"int4,unet.conv.x=int8", "conv.x"},
  };
  for (const auto& [spec, part] : bad) {
    const std::string msg = sdspeed_test::errorMessage([&] { parseWeightsSpec(spec, "--weights", o); });
    EXPECT_EQ(msg.rfind("--weights", 0), 0u) << spec << ": " << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << spec << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_NE(sdspeed_test::errorMessage([&] { parseWeightsSpec("int4,conv=int8,conv=f16", "--weights", o); }).find("twice"),
            std::string::npos);
}

// A kind override changes exactly that kind's weights: `int4,unet.conv=int8` against
// `int4` on tiny-sd-a changes the UNet's convolutions (format, bytes, output) and nothing
// else (the text encoder's and VAE's outputs are bit-identical, every other kind's bytes
// equal); `int4,attn=int8` reaches the attention projections of all three components.
TEST(WeightKindSpec, KindOverrideChangesExactlyThatKind) {
  const ModelSource src = fixtureSource("tiny-sd-a");
  SafetensorsFile ref(src.configDir + "/reference.safetensors");
  auto x = ref.toFloat("init_latents");
  x.insert(x.end(), x.begin(), x.end());
  const auto emb = ref.toFloat("text_embeddings");
  const auto lat = ref.toFloat("ddim_final_latents");
  std::vector<int64_t> ids = ref.toInt64("input_ids_uncond");
  const auto cond = ref.toInt64("input_ids_cond");
  ids.insert(ids.end(), cond.begin(), cond.end());
  auto exec = [](const std::string& spec) {
    ExecOptions e;
    e.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
    parseWeightsSpec(spec, "--weights", e);
    return e;
  };
  SdPipeline a(context(), src, exec("int4"), 16, 16, 2), b(context(), src, exec("int4,unet.conv=int8"), 16, 16, 2),
      c(context(), src, exec("int4,attn=int8"), 16, 16, 2);
  const auto textA = a.encodeText(ids), unetA = a.predictNoise(x, 999.0f, emb), decA = a.decode(lat);
  const auto textB = b.encodeText(ids), unetB = b.predictNoise(x, 999.0f, emb), decB = b.decode(lat);
  const auto textC = c.encodeText(ids), unetC = c.predictNoise(x, 999.0f, emb), decC = c.decode(lat);
  EXPECT_EQ(textA, textB);
  EXPECT_EQ(decA, decB);
  EXPECT_NE(unetA, unetB);
  EXPECT_NE(textA, textC);
  EXPECT_NE(unetA, unetC);
  EXPECT_NE(decA, decC);

  const auto& ka = a.stats("unet").memory.weightKinds;
  const auto& kb = b.stats("unet").memory.weightKinds;
  ASSERT_EQ(ka.size(), 5u);  // the tiny UNet has every kind
  ASSERT_EQ(kb.size(), 5u);
  for (const auto& [kind, g] : ka) {
    SCOPED_TRACE(kind);
    EXPECT_EQ(g.format, "int4");
    EXPECT_EQ(kb.at(kind).tensors, g.tensors);
    if (kind == "conv") {
      EXPECT_EQ(kb.at(kind).format, "int8");
      EXPECT_GT(kb.at(kind).bytes, g.bytes);
      // The whole UNet grew by exactly its convolutions' growth.
      EXPECT_EQ(b.stats("unet").memory.weightBytes - a.stats("unet").memory.weightBytes, kb.at(kind).bytes - g.bytes);
    } else {
      EXPECT_EQ(kb.at(kind).format, "int4");
      EXPECT_EQ(kb.at(kind).bytes, g.bytes);
    }
  }
  // The UNet's int4 blocks split into int8 (its convolutions' matrices) and int4 (the rest).
  const auto& ga = a.stats("unet").memory.weightGroups;
  const auto& gb = b.stats("unet").memory.weightGroups;
  ASSERT_TRUE(gb.count("int8") && gb.count("int4"));
  EXPECT_EQ(gb.at("int8").tensors + gb.at("int4").tensors, ga.at("int4").tensors);
  for (const char* comp : {"text_encoder", "vae_decoder"}) {
    EXPECT_EQ(b.stats(comp).memory.weightBytes, a.stats(comp).memory.weightBytes) << comp;
    EXPECT_EQ(b.stats(comp).memory.weightKinds.at("attn").format, "int4") << comp;
    EXPECT_EQ(c.stats(comp).memory.weightKinds.at("attn").format, "int8") << comp;
    EXPECT_GT(c.stats(comp).memory.weightBytes, a.stats(comp).memory.weightBytes) << comp;
  }
  EXPECT_EQ(b.stats("vae_decoder").memory.weightKinds.at("conv").format, "int4");
  EXPECT_EQ(c.stats("unet").memory.weightKinds.at("conv").format, "int4");
}

// The study's int4 choice (results/quantization/README.md "Per layer kind"): full 4-step
// DDIM runs with CFG, as `scripts/quant-study` runs them, decoded PSNR against the f32
// run (psnrDb, pixels clamped as ablate does). Measured (PoCL): 34.4 / 30.5 dB, against
// 33.4 / 29.3 dB without the kind overrides (unclamped: 34.3 / 30.3 and 33.3 / 29.2). The
// bound is the 30 dB; the quantized values are bit-exact on every host
// (runtime/quant), so only f32 rounding order differs between devices, far below the
// 0.5 dB margin. Fails if the overrides stop reaching the UNet (tiny-sd-b: 29.3 dB).
TEST(WeightKindSpec, FixturesReach30dBWithTheStudysInt4Choice) {
  for (const char* fx : {"tiny-sd-a", "tiny-sd-b"}) {
    SCOPED_TRACE(fx);
    const std::string dir = std::string(SDSPEED_TEST_DATA) + "/" + fx;
    SafetensorsFile ref(dir + "/reference.safetensors");
    ModelSource src;
    src.configDir = src.weightsDir = dir;
    DiffusionRequest req;
    req.condIds = ref.toInt64("input_ids_cond");
    req.uncondIds = ref.toInt64("input_ids_uncond");
    req.initLatents = ref.toFloat("init_latents");
    req.steps = 4;
    const auto shape = ref.info("init_latents").shape;
    auto decoded = [&](const std::string& spec) {
      ExecOptions exec;
      exec.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
      parseWeightsSpec(spec, "--weights", exec);
      SdPipeline pipe(context(), src, exec, shape.at(2), shape.at(3), 2);
      auto sched = loadScheduler("ddim", dir + "/scheduler/scheduler_config.json");
      return runDiffusion(pipe, *sched, req).decoded;
    };
    const auto ref32 = decoded("f32");
    auto psnr = [&](const std::vector<float>& d) { return psnrDb(d, ref32); };  // as ablate measures it
    const double plain = psnr(decoded("int4,text_encoder=int8,vae_decoder=int8"));
    const double chosen = psnr(decoded("int4,text_encoder=int8,vae_decoder=int8,unet.proj=int8,unet.attn=int8"));
    std::printf("%s: int4,text_encoder=int8,vae_decoder=int8 %.1f dB; + unet.proj=int8,unet.attn=int8 %.1f dB\n", fx,
                plain, chosen);
    EXPECT_GE(chosen, 30.0);
    EXPECT_GT(chosen, plain + 0.5);
  }
}

// A weight beyond f16's finite range (|x| > 65504; here 1e5 in an F32 tensor and in a
// BF16 one, which BF16 holds easily) fails the upload with one error naming the
// component, the tensor and the value and suggesting f32 for that component; it does not
// become inf. With that component's weights f32 the same checkpoint runs.
TEST(F16WeightSpec, OutOfRangeWeightIsAnErrorNotInf) {
  namespace fs = std::filesystem;
  const std::string dir = std::string(SDSPEED_TEST_DATA) + "/tiny-sd-a";
  SafetensorsFile ref(dir + "/reference.safetensors");
  for (StDType dtype : {StDType::F32, StDType::BF16}) {
    sdspeed_test::TempDir tmp;
    fs::copy(dir, tmp.path() + "/m", fs::copy_options::recursive);
    const std::string vae = tmp.path() + "/m/vae/diffusion_pytorch_model.safetensors";
    const std::string target = "decoder.conv_in.bias";
    {
      SafetensorsFile in(vae);
      SafetensorsWriter w;
      for (const TensorInfo& t : in.tensors()) {
        std::vector<float> v = in.toFloat(t.name);
        if (t.name != target) {
          w.add(t.name, t.shape, v);
          continue;
        }
        v[1] = 1e5f;
        if (dtype == StDType::F32) {
          w.add(t.name, t.shape, v);
        } else {
          std::vector<uint16_t> bits(v.size());  // bf16 = the top half of the float (1e5 -> 99840)
          for (size_t i = 0; i < v.size(); ++i) {
            uint32_t u;
            std::memcpy(&u, &v[i], 4);
            bits[i] = static_cast<uint16_t>(u >> 16);
          }
          w.add(t.name, t.shape, StDType::BF16, bits);
        }
      }
      w.write(vae + ".new");
    }
    fs::rename(vae + ".new", vae);
    ModelSource src;
    src.configDir = src.weightsDir = tmp.path() + "/m";
    ExecOptions exec;
    exec.dbDir = std::string(SDSPEED_SOURCE_DIR) + "/configs/tuned";
    exec.format.weights = DType::F16;
    SdPipeline pipe(context(), src, exec, 16, 16, 2);
    const auto lat = ref.toFloat("ddim_final_latents");
    const std::string msg = sdspeed_test::errorMessage([&] { pipe.decode(lat); });
    EXPECT_NE(msg.find(target), std::string::npos) << msg;
    EXPECT_NE(msg.find(dtype == StDType::F32 ? "100000" : "99840"), std::string::npos) << msg;
    EXPECT_NE(msg.find("vae_decoder=f32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--weights"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    parseWeightsSpec("f16,vae_decoder=f32", "--weights", exec);
    SdPipeline ok(context(), src, exec, 16, 16, 2);
    for (float v : ok.decode(lat)) ASSERT_TRUE(std::isfinite(v));
  }
}

}  // namespace
}  // namespace sdspeed
