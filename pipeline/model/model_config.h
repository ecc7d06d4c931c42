// The architecture of the three Stable Diffusion components, read from the model's
// own diffusers config.json files (UNet2DConditionModel, AutoencoderKL,
// CLIPTextModel). Only what the inference graph needs; every field is checked and a
// key the graph cannot honour (an unsupported block type, a time-embedding variant)
// is an Error naming the file and the key, never silently ignored.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sdspeed {

// A model's config.json, parsed: an Error naming the file when it cannot be read, is not
// JSON or is not an object. (The loaders below read through it; the single-file
// checkpoint's key map takes the raw JSON.)
nlohmann::json readModelConfigJson(const std::string& path);

struct UNetConfig {
  std::string path;  // the config.json it came from (for error messages)
  int64_t inChannels = 4, outChannels = 4;
  std::vector<int64_t> blockOut;             // block_out_channels
  int64_t layersPerBlock = 2;
  std::vector<std::string> downTypes, upTypes;
  std::vector<int64_t> heads;                // per down block (diffusers' legacy attention_head_dim)
  int64_t crossAttentionDim = 768;
  int64_t groups = 32;
  double normEps = 1e-5;
  bool flipSinToCos = true;
  double freqShift = 0;
  bool useLinearProjection = false;
  int64_t transformerLayers = 1;             // per block (one value for all blocks)
  int64_t sampleSize = 64;
  bool midBlockAttention = true;             // UNetMidBlock2DCrossAttn (else UNetMidBlock2D)
  int64_t timeEmbedDim() const { return blockOut.at(0) * 4; }
};

struct VaeConfig {
  std::string path;
  int64_t latentChannels = 4, outChannels = 3;
  std::vector<int64_t> blockOut;
  int64_t layersPerBlock = 1;
  int64_t groups = 32;
  double scalingFactor = 0.18215;
  bool usePostQuantConv = true;
  bool midAttention = true;
  int64_t sampleSize = 512;
  // Latent H (or W) times this is the image's.
  int64_t upscale() const { return int64_t{1} << (blockOut.size() - 1); }
};

struct ClipConfig {
  std::string path;
  int64_t vocab = 49408, hidden = 768, intermediate = 3072, layers = 12, heads = 12, positions = 77;
  std::string act = "quick_gelu";  // hidden_act: quick_gelu | gelu | gelu_new (tanh)
  double eps = 1e-5;
  int64_t bos = 49406, eos = 49407, pad = 49407;
};

// Each throws Error naming the file and key on anything missing, malformed or unsupported.
UNetConfig loadUNetConfig(const std::string& path);
VaeConfig loadVaeConfig(const std::string& path);
ClipConfig loadClipConfig(const std::string& path);

}  // namespace sdspeed
