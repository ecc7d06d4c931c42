// The single-file (CompVis / LDM) key map of pipeline/weights.h, generated from the
// diffusers configs the way diffusers' convert_ldm_unet_checkpoint / convert_ldm_vae_checkpoint
// (src/diffusers/loaders/single_file_utils.py) rename keys. diffusers derives the block
// indices from the keys present in the file; here they come from the config, which also
// gives every tensor's shape, so a config that does not match a checkpoint is caught when
// it is opened.
//
// LDM UNet layout (openaimodel.UNetModel): input_blocks.0.0 = conv_in; then per level i,
// layers_per_block slots [resnet .0, attention .1 if the level has one] and, except at the
// last level, one slot with the downsampler (.0.op). middle_block.{0,1,2} = resnet,
// attention, resnet. output_blocks: per level (deepest first) layers_per_block + 1 slots
// [resnet .0, attention .1], the level's last slot also holding the upsampler (.1.conv,
// or .2.conv after an attention). out.0 / out.2 = conv_norm_out / conv_out.
#include <nlohmann/json.hpp>

#include "pipeline/weights.h"
#include "runtime/error.h"

namespace sdspeed {

using nlohmann::json;
using Shape = std::vector<int64_t>;

namespace {

class MapBuilder {
 public:
  explicit MapBuilder(std::string ldmPrefix) : prefix_(std::move(ldmPrefix)) {}
  void add(const std::string& d, const std::string& l, Shape shape, bool convToLinear = false) {
    keys_.push_back({d, prefix_ + l, std::move(shape), convToLinear});
  }
  // A module with weight `w` and (optionally) a bias of w[0] elements.
  void module(const std::string& d, const std::string& l, Shape w, bool bias = true, bool convToLinear = false) {
    int64_t out = w[0];
    add(d + ".weight", l + ".weight", std::move(w), convToLinear);
    if (bias) add(d + ".bias", l + ".bias", {out});
  }
  void norm(const std::string& d, const std::string& l, int64_t c) { module(d, l, {c}); }
  std::vector<LdmKey> take() { return std::move(keys_); }

 private:
  std::string prefix_;
  std::vector<LdmKey> keys_;
};

std::string cfgWhere(const char* which, const std::string& key) {
  return std::string(which) + " config: '" + key + "': ";
}

int64_t getInt(const json& cfg, const char* which, const std::string& key, int64_t fallback, bool required) {
  if (!cfg.contains(key) || cfg[key].is_null()) {
    if (required) throw Error(cfgWhere(which, key) + "missing (needed for the single-file key map)");
    return fallback;
  }
  if (!cfg[key].is_number_integer()) throw Error(cfgWhere(which, key) + "must be an integer, got " + cfg[key].dump());
  return cfg[key].get<int64_t>();
}

// A bool with a default for a missing or null key (diffusers writes null for "default").
bool getBool(const json& cfg, const char* which, const std::string& key, bool fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  if (!cfg[key].is_boolean()) throw Error(cfgWhere(which, key) + "must be true or false, got " + cfg[key].dump());
  return cfg[key].get<bool>();
}

std::vector<int64_t> getInts(const json& cfg, const char* which, const std::string& key) {
  if (!cfg.contains(key) || !cfg[key].is_array() || cfg[key].empty())
    throw Error(cfgWhere(which, key) + "missing or not a non-empty list");
  std::vector<int64_t> out;
  for (const json& v : cfg[key]) {
    if (!v.is_number_integer() || v.get<int64_t>() <= 0)
      throw Error(cfgWhere(which, key) + "must be positive integers, got " + cfg[key].dump());
    out.push_back(v.get<int64_t>());
  }
  return out;
}

std::vector<std::string> getStrings(const json& cfg, const char* which, const std::string& key, size_t n) {
  if (!cfg.contains(key) || !cfg[key].is_array() || cfg[key].size() != n)
    throw Error(cfgWhere(which, key) + "must be a list of " + std::to_string(n) + " block types (one per block_out_channels entry)");
  std::vector<std::string> out;
  for (const json& v : cfg[key]) {
    if (!v.is_string()) throw Error(cfgWhere(which, key) + "entries must be strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

// An int, or a list with one int per down block (diffusers allows both).
int64_t perBlock(const json& cfg, const char* which, const std::string& key, size_t block, int64_t fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  const json& v = cfg[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_array() && block < v.size() && v[block].is_number_integer()) return v[block].get<int64_t>();
  throw Error(cfgWhere(which, key) + "must be an integer or a list of integers per block, got " + v.dump());
}

// Config values the LDM layout has no keys for (SDXL-style embeddings and the like).
void requireNull(const json& cfg, const char* which, const std::string& key) {
  if (cfg.contains(key) && !cfg[key].is_null())
    throw Error(cfgWhere(which, key) + "is " + cfg[key].dump() +
                "; the single-file key map covers SD 1.x / 2.x UNets only (null expected)");
}
void requireValue(const json& cfg, const char* which, const std::string& key, const json& expected) {
  if (cfg.contains(key) && !cfg[key].is_null() && cfg[key] != expected)
    throw Error(cfgWhere(which, key) + "is " + cfg[key].dump() + "; the single-file key map supports " +
                expected.dump() + " only");
}

// diffusers ResnetBlock2D <- LDM ResBlock (UNet) or ResnetBlock (VAE, temb = 0: no time projection).
void unetResnet(MapBuilder& m, const std::string& d, const std::string& l, int64_t in, int64_t out, int64_t temb) {
  m.norm(d + ".norm1", l + ".in_layers.0", in);
  m.module(d + ".conv1", l + ".in_layers.2", {out, in, 3, 3});
  m.module(d + ".time_emb_proj", l + ".emb_layers.1", {out, temb});
  m.norm(d + ".norm2", l + ".out_layers.0", out);
  m.module(d + ".conv2", l + ".out_layers.3", {out, out, 3, 3});
  if (in != out) m.module(d + ".conv_shortcut", l + ".skip_connection", {out, in, 1, 1});
}

void vaeResnet(MapBuilder& m, const std::string& d, const std::string& l, int64_t in, int64_t out) {
  m.norm(d + ".norm1", l + ".norm1", in);
  m.module(d + ".conv1", l + ".conv1", {out, in, 3, 3});
  m.norm(d + ".norm2", l + ".norm2", out);
  m.module(d + ".conv2", l + ".conv2", {out, out, 3, 3});
  if (in != out) m.module(d + ".conv_shortcut", l + ".nin_shortcut", {out, in, 1, 1});
}

// diffusers Transformer2DModel <- LDM SpatialTransformer: the names inside are the same.
void transformer(MapBuilder& m, const std::string& d, const std::string& l, int64_t c, int64_t cross, int64_t depth,
                 bool linearProj) {
  Shape proj = linearProj ? Shape{c, c} : Shape{c, c, 1, 1};
  m.norm(d + ".norm", l + ".norm", c);
  m.module(d + ".proj_in", l + ".proj_in", proj);
  for (int64_t k = 0; k < depth; ++k) {
    const std::string b = ".transformer_blocks." + std::to_string(k);
    for (const char* n : {".norm1", ".norm2", ".norm3"}) m.norm(d + b + n, l + b + n, c);
    for (const auto& [attn, kv] : {std::pair<const char*, int64_t>{".attn1", c}, {".attn2", cross}}) {
      const std::string a = b + attn;
      m.module(d + a + ".to_q", l + a + ".to_q", {c, c}, false);
      m.module(d + a + ".to_k", l + a + ".to_k", {c, kv}, false);
      m.module(d + a + ".to_v", l + a + ".to_v", {c, kv}, false);
      m.module(d + a + ".to_out.0", l + a + ".to_out.0", {c, c});
    }
    m.module(d + b + ".ff.net.0.proj", l + b + ".ff.net.0.proj", {8 * c, c});  // GEGLU: 2 x 4c
    m.module(d + b + ".ff.net.2", l + b + ".ff.net.2", {c, 4 * c});
  }
  m.module(d + ".proj_out", l + ".proj_out", proj);
}

}  // namespace

std::vector<LdmKey> ldmUnetKeyMap(const json& cfg) {
  const char* W = "unet";
  if (!cfg.is_object()) throw Error("unet config: not a JSON object");
  for (const char* k : {"class_embed_type", "addition_embed_type", "encoder_hid_dim", "time_cond_proj_dim",
                        "num_class_embeds"})
    requireNull(cfg, W, k);
  requireValue(cfg, W, "time_embedding_type", "positional");
  requireValue(cfg, W, "mid_block_type", "UNetMidBlock2DCrossAttn");
  requireValue(cfg, W, "conv_in_kernel", 3);
  requireValue(cfg, W, "conv_out_kernel", 3);
  const Shape boc = getInts(cfg, W, "block_out_channels");
  const size_t n = boc.size();
  const auto down = getStrings(cfg, W, "down_block_types", n);
  const auto up = getStrings(cfg, W, "up_block_types", n);
  const int64_t lpb = getInt(cfg, W, "layers_per_block", 2, true);
  const int64_t inCh = getInt(cfg, W, "in_channels", 4, false);
  const int64_t outCh = getInt(cfg, W, "out_channels", 4, false);
  const int64_t temb = getInt(cfg, W, "time_embedding_dim", 4 * boc[0], false);
  const bool linear = getBool(cfg, W, "use_linear_projection", false);
  if (lpb <= 0) throw Error("unet config: 'layers_per_block' must be positive");

  auto hasAttn = [&](const std::string& type, const char* key, size_t i) {
    if (type == "CrossAttnDownBlock2D" || type == "CrossAttnUpBlock2D") return true;
    if (type == "DownBlock2D" || type == "UpBlock2D") return false;
    throw Error(cfgWhere(W, key) + "block " + std::to_string(i) + " type '" + type +
                "' is not supported by the single-file key map (CrossAttnDownBlock2D, DownBlock2D, "
                "CrossAttnUpBlock2D, UpBlock2D)");
  };
  // Per-block transformer depth and cross-attention width (int or per-down-block list;
  // the up blocks use the list reversed, as diffusers builds them).
  auto depth = [&](size_t downIndex) { return perBlock(cfg, W, "transformer_layers_per_block", downIndex, 1); };
  auto cross = [&](size_t downIndex) { return perBlock(cfg, W, "cross_attention_dim", downIndex, 1280); };

  MapBuilder m("model.diffusion_model.");
  m.module("time_embedding.linear_1", "time_embed.0", {temb, boc[0]});
  m.module("time_embedding.linear_2", "time_embed.2", {temb, temb});
  m.module("conv_in", "input_blocks.0.0", {boc[0], inCh, 3, 3});

  int slot = 1;
  int64_t outC = boc[0];
  for (size_t i = 0; i < n; ++i) {
    const int64_t inC = outC;
    outC = boc[i];
    const bool attn = hasAttn(down[i], "down_block_types", i);
    const std::string db = "down_blocks." + std::to_string(i);
    for (int64_t j = 0; j < lpb; ++j, ++slot) {
      const std::string ib = "input_blocks." + std::to_string(slot);
      unetResnet(m, db + ".resnets." + std::to_string(j), ib + ".0", j == 0 ? inC : outC, outC, temb);
      if (attn)
        transformer(m, db + ".attentions." + std::to_string(j), ib + ".1", outC, cross(i), depth(i), linear);
    }
    if (i + 1 < n) {
      m.module(db + ".downsamplers.0.conv", "input_blocks." + std::to_string(slot) + ".0.op", {outC, outC, 3, 3});
      ++slot;
    }
  }

  const int64_t midC = boc[n - 1];
  unetResnet(m, "mid_block.resnets.0", "middle_block.0", midC, midC, temb);
  transformer(m, "mid_block.attentions.0", "middle_block.1", midC, cross(n - 1), depth(n - 1), linear);
  unetResnet(m, "mid_block.resnets.1", "middle_block.2", midC, midC, temb);

  slot = 0;
  outC = boc[n - 1];
  for (size_t i = 0; i < n; ++i) {
    const int64_t prevC = outC;
    outC = boc[n - 1 - i];
    const int64_t skipC = boc[i + 1 < n ? n - 2 - i : 0];  // the down level's input channels
    const bool attn = hasAttn(up[i], "up_block_types", i);
    const std::string ub = "up_blocks." + std::to_string(i);
    for (int64_t j = 0; j <= lpb; ++j, ++slot) {
      const std::string ob = "output_blocks." + std::to_string(slot);
      const int64_t resIn = (j == 0 ? prevC : outC) + (j == lpb ? skipC : outC);
      unetResnet(m, ub + ".resnets." + std::to_string(j), ob + ".0", resIn, outC, temb);
      if (attn)
        transformer(m, ub + ".attentions." + std::to_string(j), ob + ".1", outC, cross(n - 1 - i),
                    depth(n - 1 - i), linear);
      if (j == lpb && i + 1 < n)
        m.module(ub + ".upsamplers.0.conv", ob + (attn ? ".2" : ".1") + ".conv", {outC, outC, 3, 3});
    }
  }
  m.norm("conv_norm_out", "out.0", boc[0]);
  m.module("conv_out", "out.2", {outCh, boc[0], 3, 3});
  return m.take();
}

std::vector<LdmKey> ldmVaeKeyMap(const json& cfg) {
  const char* W = "vae";
  if (!cfg.is_object()) throw Error("vae config: not a JSON object");
  const Shape boc = getInts(cfg, W, "block_out_channels");
  const size_t n = boc.size();
  for (const std::string& t : getStrings(cfg, W, "down_block_types", n))
    if (t != "DownEncoderBlock2D")
      throw Error("vae config: 'down_block_types': '" + t + "' not supported (DownEncoderBlock2D only)");
  for (const std::string& t : getStrings(cfg, W, "up_block_types", n))
    if (t != "UpDecoderBlock2D")
      throw Error("vae config: 'up_block_types': '" + t + "' not supported (UpDecoderBlock2D only)");
  const int64_t lpb = getInt(cfg, W, "layers_per_block", 1, true);
  const int64_t inCh = getInt(cfg, W, "in_channels", 3, false);
  const int64_t outCh = getInt(cfg, W, "out_channels", 3, false);
  const int64_t lat = getInt(cfg, W, "latent_channels", 4, false);
  const bool midAttn = getBool(cfg, W, "mid_block_add_attention", true);
  if (lpb <= 0) throw Error("vae config: 'layers_per_block' must be positive");

  MapBuilder m("first_stage_model.");
  auto mid = [&](const std::string& d, const std::string& l) {
    const int64_t c = boc[n - 1];
    vaeResnet(m, d + ".mid_block.resnets.0", l + ".mid.block_1", c, c);
    if (midAttn) {
      const std::string da = d + ".mid_block.attentions.0", la = l + ".mid.attn_1";
      m.norm(da + ".group_norm", la + ".norm", c);
      // LDM's AttnBlock uses 1x1 convolutions, diffusers' Attention Linear layers.
      for (const auto& [dn, ln] : {std::pair<const char*, const char*>{".to_q", ".q"}, {".to_k", ".k"},
                                   {".to_v", ".v"}, {".to_out.0", ".proj_out"}})
        m.module(da + dn, la + ln, {c, c}, true, true);
    }
    vaeResnet(m, d + ".mid_block.resnets.1", l + ".mid.block_2", c, c);
  };

  m.module("encoder.conv_in", "encoder.conv_in", {boc[0], inCh, 3, 3});
  int64_t outC = boc[0];
  for (size_t i = 0; i < n; ++i) {
    const int64_t inC = outC;
    outC = boc[i];
    const std::string d = "encoder.down_blocks." + std::to_string(i), l = "encoder.down." + std::to_string(i);
    for (int64_t j = 0; j < lpb; ++j)
      vaeResnet(m, d + ".resnets." + std::to_string(j), l + ".block." + std::to_string(j), j == 0 ? inC : outC, outC);
    if (i + 1 < n) m.module(d + ".downsamplers.0.conv", l + ".downsample.conv", {outC, outC, 3, 3});
  }
  mid("encoder", "encoder");
  m.norm("encoder.conv_norm_out", "encoder.norm_out", boc[n - 1]);
  m.module("encoder.conv_out", "encoder.conv_out", {2 * lat, boc[n - 1], 3, 3});  // mean and logvar
  if (getBool(cfg, W, "use_quant_conv", true)) m.module("quant_conv", "quant_conv", {2 * lat, 2 * lat, 1, 1});
  if (getBool(cfg, W, "use_post_quant_conv", true)) m.module("post_quant_conv", "post_quant_conv", {lat, lat, 1, 1});

  m.module("decoder.conv_in", "decoder.conv_in", {boc[n - 1], lat, 3, 3});
  mid("decoder", "decoder");
  outC = boc[n - 1];
  for (size_t i = 0; i < n; ++i) {
    const int64_t prevC = outC;
    outC = boc[n - 1 - i];
    // LDM indexes the decoder's up[] by resolution level: diffusers' up_blocks.0 (deepest) is up.{n-1}.
    const std::string d = "decoder.up_blocks." + std::to_string(i), l = "decoder.up." + std::to_string(n - 1 - i);
    for (int64_t j = 0; j <= lpb; ++j)
      vaeResnet(m, d + ".resnets." + std::to_string(j), l + ".block." + std::to_string(j), j == 0 ? prevC : outC,
                outC);
    if (i + 1 < n) m.module(d + ".upsamplers.0.conv", l + ".upsample.conv", {outC, outC, 3, 3});
  }
  m.norm("decoder.conv_norm_out", "decoder.norm_out", boc[0]);
  m.module("decoder.conv_out", "decoder.conv_out", {outCh, boc[0], 3, 3});
  return m.take();
}

}  // namespace sdspeed
