#include "pipeline/model/model_config.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "runtime/atomic_file.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

using json = nlohmann::json;

}  // namespace

json readModelConfigJson(const std::string& path) {
  std::string text;
  if (!readFile(path, text)) throw Error(path + ": cannot open the model config");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(path + ": a model config must be a JSON object");
  return j;
}

namespace {

// A config.json with typed getters: a missing or null key takes diffusers' default,
// a present key of the wrong type is an Error naming file and key.
class Cfg {
 public:
  explicit Cfg(const std::string& path) : path_(path), j_(readModelConfigJson(path)) {}
  bool has(const char* k) const { return j_.contains(k) && !j_[k].is_null(); }
  int64_t integer(const char* k, int64_t def) const {
    if (!has(k)) return def;
    if (!j_[k].is_number_integer()) bad(k, "an integer");
    return j_[k].get<int64_t>();
  }
  double number(const char* k, double def) const {
    if (!has(k)) return def;
    if (!j_[k].is_number()) bad(k, "a number");
    return j_[k].get<double>();
  }
  bool boolean(const char* k, bool def) const {
    if (!has(k)) return def;
    if (!j_[k].is_boolean()) bad(k, "true or false");
    return j_[k].get<bool>();
  }
  std::string string(const char* k, const std::string& def) const {
    if (!has(k)) return def;
    if (!j_[k].is_string()) bad(k, "a string");
    return j_[k].get<std::string>();
  }
  std::vector<int64_t> ints(const char* k, std::vector<int64_t> def) const {
    if (!has(k)) return def;
    if (!j_[k].is_array()) bad(k, "a list of integers");
    std::vector<int64_t> out;
    for (const auto& v : j_[k]) {
      if (!v.is_number_integer()) bad(k, "a list of integers");
      out.push_back(v.get<int64_t>());
    }
    return out;
  }
  // An int (same for every block) or a list with one value per block.
  std::vector<int64_t> perBlock(const char* k, int64_t def, size_t blocks) const {
    if (has(k) && j_[k].is_array()) {
      auto v = ints(k, {});
      if (v.size() != blocks)
        fail(std::string(k) + " has " + std::to_string(v.size()) + " values for " + std::to_string(blocks) + " blocks");
      return v;
    }
    return std::vector<int64_t>(blocks, integer(k, def));
  }
  std::vector<std::string> strings(const char* k, std::vector<std::string> def) const {
    if (!has(k)) return def;
    if (!j_[k].is_array()) bad(k, "a list of strings");
    std::vector<std::string> out;
    for (const auto& v : j_[k]) {
      if (!v.is_string()) bad(k, "a list of strings");
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  // Throws unless the key is absent/null or one of the supported values.
  void requireOneOf(const char* k, const std::vector<std::string>& ok) const {
    if (!has(k)) return;
    std::string v = j_[k].is_string() ? j_[k].get<std::string>() : j_[k].dump();
    for (const auto& o : ok)
      if (v == o) return;
    fail(std::string(k) + "=" + v + " is not supported by sdspeed's graph");
  }
  void requireAbsent(const char* k) const {
    if (has(k) && !(j_[k].is_boolean() && !j_[k].get<bool>()))
      fail(std::string(k) + "=" + j_[k].dump() + " is not supported by sdspeed's graph");
  }
  [[noreturn]] void fail(const std::string& what) const { throw Error(path_ + ": " + what); }

 private:
  [[noreturn]] void bad(const char* k, const char* type) const {
    fail(std::string("'") + k + "' must be " + type + ", got " + j_[k].dump());
  }
  std::string path_;
  json j_;
};

// GroupNorm splits every block's channels into `groups` equal groups.
void requireGroupsDivide(const Cfg& c, const std::vector<int64_t>& blockOut, int64_t groups) {
  for (int64_t b : blockOut)
    if (b % groups) c.fail("block_out_channels " + std::to_string(b) + " is not a multiple of norm_num_groups");
}

void requirePositive(const Cfg& c, const std::vector<int64_t>& v, const char* what) {
  if (v.empty()) c.fail(std::string(what) + " is empty");
  // Each block after the first halves (UNet) or doubles (VAE) the latent: 2^(n-1) must be
  // a sane integer (SD has 4 blocks).
  if (std::string(what) == "block_out_channels" && v.size() > 16)
    c.fail("block_out_channels has " + std::to_string(v.size()) + " blocks; at most 16 are supported");
  for (int64_t x : v)
    if (x < 1) c.fail(std::string(what) + " must be positive");
}

}  // namespace

UNetConfig loadUNetConfig(const std::string& path) {
  Cfg c(path);
  UNetConfig u;
  u.path = path;
  u.inChannels = c.integer("in_channels", 4);
  u.outChannels = c.integer("out_channels", 4);
  u.blockOut = c.ints("block_out_channels", {320, 640, 1280, 1280});
  requirePositive(c, u.blockOut, "block_out_channels");
  const size_t nb = u.blockOut.size();
  u.layersPerBlock = c.integer("layers_per_block", 2);
  if (u.layersPerBlock < 1) c.fail("layers_per_block must be >= 1");
  u.downTypes = c.strings("down_block_types", {"CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                                               "DownBlock2D"});
  u.upTypes = c.strings("up_block_types", {"UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D",
                                           "CrossAttnUpBlock2D"});
  if (u.downTypes.size() != nb || u.upTypes.size() != nb)
    c.fail("down_block_types and up_block_types need one entry per block_out_channels entry (" + std::to_string(nb) +
           ")");
  for (const auto& t : u.downTypes)
    if (t != "CrossAttnDownBlock2D" && t != "DownBlock2D") c.fail("down block type '" + t + "' is not supported");
  for (const auto& t : u.upTypes)
    if (t != "CrossAttnUpBlock2D" && t != "UpBlock2D") c.fail("up block type '" + t + "' is not supported");
  // diffusers' legacy naming: attention_head_dim is the number of heads unless
  // num_attention_heads is given.
  const char* headsKey = c.has("num_attention_heads") ? "num_attention_heads" : "attention_head_dim";
  u.heads = c.perBlock(headsKey, 8, nb);
  requirePositive(c, u.heads, headsKey);
  u.crossAttentionDim = c.integer("cross_attention_dim", 1280);
  u.groups = c.integer("norm_num_groups", 32);
  if (u.groups < 1 || u.inChannels < 1 || u.outChannels < 1 || u.crossAttentionDim < 1)
    c.fail("norm_num_groups, in_channels, out_channels and cross_attention_dim must be positive");
  u.normEps = c.number("norm_eps", 1e-5);
  u.flipSinToCos = c.boolean("flip_sin_to_cos", true);
  u.freqShift = c.number("freq_shift", 0);
  u.useLinearProjection = c.boolean("use_linear_projection", false);
  auto tl = c.perBlock("transformer_layers_per_block", 1, nb);
  for (int64_t t : tl)
    if (t != tl[0]) c.fail("transformer_layers_per_block must be the same for every block in sdspeed's graph");
  u.transformerLayers = tl[0];
  u.sampleSize = c.integer("sample_size", 64);
  const std::string mid = c.string("mid_block_type", "UNetMidBlock2DCrossAttn");
  if (mid != "UNetMidBlock2DCrossAttn") c.fail("mid_block_type '" + mid + "' is not supported");
  requireGroupsDivide(c, u.blockOut, u.groups);
  for (size_t i = 0; i < nb; ++i)
    if (u.blockOut[i] % u.heads[i]) c.fail("block_out_channels[" + std::to_string(i) + "] is not a multiple of its heads");
  // Keys that change the computation in ways the graph does not implement.
  c.requireOneOf("act_fn", {"silu"});
  c.requireOneOf("time_embedding_type", {"positional"});
  c.requireOneOf("resnet_time_scale_shift", {"default"});
  c.requireAbsent("class_embed_type");
  c.requireAbsent("addition_embed_type");
  c.requireAbsent("encoder_hid_dim");
  c.requireAbsent("time_cond_proj_dim");
  c.requireAbsent("dual_cross_attention");
  c.requireAbsent("only_cross_attention");
  c.requireAbsent("center_input_sample");
  // upcast_attention: fp32 arithmetic everywhere already, so it changes nothing here.
  if (c.integer("conv_in_kernel", 3) != 3 || c.integer("conv_out_kernel", 3) != 3)
    c.fail("conv_in_kernel/conv_out_kernel other than 3 are not supported");
  if (c.integer("downsample_padding", 1) != 1) c.fail("downsample_padding other than 1 is not supported");
  if (c.number("mid_block_scale_factor", 1) != 1 || c.number("resnet_out_scale_factor", 1) != 1)
    c.fail("output scale factors other than 1 are not supported");
  return u;
}

VaeConfig loadVaeConfig(const std::string& path) {
  Cfg c(path);
  VaeConfig v;
  v.path = path;
  v.latentChannels = c.integer("latent_channels", 4);
  v.outChannels = c.integer("out_channels", 3);
  v.blockOut = c.ints("block_out_channels", {64});
  requirePositive(c, v.blockOut, "block_out_channels");
  v.layersPerBlock = c.integer("layers_per_block", 1);
  if (v.layersPerBlock < 1) c.fail("layers_per_block must be >= 1");
  v.groups = c.integer("norm_num_groups", 32);
  if (v.groups < 1 || v.latentChannels < 1 || v.outChannels < 1)
    c.fail("norm_num_groups, latent_channels and out_channels must be positive");
  v.scalingFactor = c.number("scaling_factor", 0.18215);
  // The decoder reads latents / scaling_factor: 0 would make every pixel inf or NaN.
  if (!(v.scalingFactor > 0)) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", v.scalingFactor);
    c.fail(std::string("scaling_factor must be positive, got ") + got);
  }
  v.usePostQuantConv = c.boolean("use_post_quant_conv", true);
  v.midAttention = c.boolean("mid_block_add_attention", true);
  v.sampleSize = c.integer("sample_size", 512);
  const auto up = c.strings("up_block_types", std::vector<std::string>(v.blockOut.size(), "UpDecoderBlock2D"));
  if (up.size() != v.blockOut.size()) c.fail("up_block_types needs one entry per block_out_channels entry");
  for (const auto& t : up)
    if (t != "UpDecoderBlock2D") c.fail("up block type '" + t + "' is not supported");
  requireGroupsDivide(c, v.blockOut, v.groups);
  c.requireOneOf("act_fn", {"silu"});
  if (c.has("shift_factor")) c.fail("shift_factor is not supported (SD 1.x/2.x VAEs have none)");
  if (c.has("latents_mean") || c.has("latents_std")) c.fail("latents_mean/latents_std are not supported");
  return v;
}

ClipConfig loadClipConfig(const std::string& path) {
  Cfg c(path);
  ClipConfig k;
  k.path = path;
  k.vocab = c.integer("vocab_size", 49408);
  k.hidden = c.integer("hidden_size", 512);
  k.intermediate = c.integer("intermediate_size", 2048);
  k.layers = c.integer("num_hidden_layers", 12);
  k.heads = c.integer("num_attention_heads", 8);
  k.positions = c.integer("max_position_embeddings", 77);
  k.act = c.string("hidden_act", "quick_gelu");
  k.eps = c.number("layer_norm_eps", 1e-5);
  k.bos = c.integer("bos_token_id", 49406);
  k.eos = c.integer("eos_token_id", 49407);
  k.pad = c.integer("pad_token_id", 1);
  if (k.act != "quick_gelu" && k.act != "gelu" && k.act != "gelu_new" && k.act != "gelu_pytorch_tanh")
    c.fail("hidden_act '" + k.act + "' is not supported (quick_gelu, gelu, gelu_new, gelu_pytorch_tanh)");
  if (k.hidden < 1 || k.heads < 1 || k.hidden % k.heads) c.fail("hidden_size must be a positive multiple of num_attention_heads");
  for (const auto& [key, v] : {std::pair<const char*, int64_t>{"num_hidden_layers", k.layers}, {"intermediate_size", k.intermediate},
                                {"vocab_size", k.vocab}, {"max_position_embeddings", k.positions}})
    if (v < 1) c.fail(std::string(key) + " must be positive, got " + std::to_string(v));
  return k;
}

}  // namespace sdspeed
