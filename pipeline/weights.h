// Model weights for the pipeline runner, by diffusers parameter name, whatever their
// source: a diffusers folder (DIR/unet, DIR/vae, DIR/text_encoder safetensors), a
// single-file original (CompVis / LDM) SD 1.x checkpoint seen through a key map
// derived from the diffusers configs, or seeded random weights for timing runs
// without a checkpoint.
//
// Names are diffusers' names inside the component ("down_blocks.0.resnets.0.conv1.weight",
// "decoder.mid_block.attentions.0.to_q.weight", "text_model.encoder.layers.0.self_attn.q_proj.weight").
// Text encoder names are accepted with or without the "text_model." level: transformers
// 5.x saves CLIPTextModel without it (the tiny-sd-a fixture does), 4.x and SD 1.x
// single files with it.
//
// Every problem is one sdspeed::Error naming the file and the tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <vector>

namespace sdspeed {

// One component's weights (unet, vae, text_encoder), by diffusers parameter name.
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // The tensor named `name` as float32, in diffusers' shape. Throws sdspeed::Error naming
  // the file and the tensor when it is missing, has another shape than `shape` (both
  // printed), or an unsupported dtype. F16 / BF16 are widened exactly, F32 copied.
  virtual std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const = 0;
  virtual bool has(const std::string& name) const = 0;
  // e.g. "tests/data/tiny-sd-a/unet/diffusion_pytorch_model.safetensors"
  virtual std::string describe() const = 0;
  // dtype on disk of the tensor ("F32", "F16", "BF16"; "random" for randomWeights), for
  // the report. Throws like load() when the tensor is missing.
  virtual std::string diskDType(const std::string& name) const = 0;
  // (Addition) The diffusers names this source holds, sorted; empty for random weights,
  // which produce any name asked for.
  virtual std::vector<std::string> names() const { return {}; }
  // The tensor's bytes inside the memory-mapped checkpoint when it is stored there as
  // `dtype` ("F32", "F16"; "Q8_0" / "Q4_0" for `sdspeed quantize`'s blocks,
  // pipeline/quantized_file.h): little-endian, in diffusers' element order, i.e. exactly what a
  // packed NCHW tensor of that dtype holds. A streamed weight is then uploaded from the
  // file's pages (which the OS may drop and read again: on a phone's shared DRAM no second
  // copy) instead of a packed copy. Empty for random weights or another dtype on disk.
  // Valid while the source lives.
  virtual std::span<const std::byte> mappedBytes(const std::string& name, const std::string& dtype) const {
    (void)name;
    (void)dtype;
    return {};
  }
  // (Addition) The tensor's shape in diffusers' terms as the source stores it, where it is
  // known without reading the values (a file's header); empty where it is not (random
  // weights, GGUF). A caller that uploads mappedBytes compares it with the shape it needs
  // first, and reads through load() (which names a mismatch) when they differ.
  virtual std::vector<int64_t> storedShape(const std::string& name) const {
    (void)name;
    return {};
  }
};

// component: "unet", "vae", "text_encoder". Folder layout:
// DIR/unet/diffusion_pytorch_model.safetensors, DIR/vae/diffusion_pytorch_model.safetensors,
// DIR/text_encoder/model.safetensors; the ".fp16.safetensors" variant names are used when
// the plain file is absent.
std::unique_ptr<WeightSource> openFolderWeights(const std::string& modelDir, const std::string& component);

// The single-file original (LDM/CompVis) checkpoint, seen through a key map as the
// component's diffusers names. unetConfig / vaeConfig: the parsed diffusers config.json
// of the architecture (the map's block indices depend on block_out_channels,
// layers_per_block and which blocks have attentions). The text encoder needs neither
// (its keys are "cond_stage_model.transformer." + the transformers name). Opening checks
// that every key the map expects is in the file with the shape the config implies, so a
// config that does not match the checkpoint fails here, listing the first differences.
// The non-EMA weights are used (as diffusers does by default). A FILE ending in .gguf is
// read as GGUF (pipeline/gguf.h: stable-diffusion.cpp's files, the same LDM names, F32 /
// F16 / Q8_0 / Q4_0 tensors; quantized ones are dequantized on load, or uploaded as they
// are where they are sdspeed's int8/int4 rows: mappedBytes "Q8_0" / "Q4_0").
std::unique_ptr<WeightSource> openSingleFileWeights(const std::string& file, const std::string& component,
                                                     const nlohmann::json& unetConfig,
                                                     const nlohmann::json& vaeConfig);

// Seeded random weights for timing without a checkpoint. Each tensor's values depend
// only on (seed, component, name, element index): a counter-based generator (splitmix64
// of a hash of seed/component/name plus the element's pair index, Box-Muller), so the
// load order and the other tensors asked for change nothing. The rule (randomInit):
//   - name ending ".bias":                        0.01 * N(0,1)
//   - "..._embedding.weight" (token / position
//     embedding tables of the text encoder):      0.02 * N(0,1)
//   - weight with >= 2 dims (conv, linear):       N(0,1) / sqrt(fan_in), fan_in = prod(shape[1:])
//     (variance preserving, so activations stay O(1) through a full SD 1.5 run)
//   - other weights (1-dim: group / layer norms): 1 + 0.02 * N(0,1)
// component: "unet", "vae", "text_encoder".
std::unique_ptr<WeightSource> randomWeights(uint64_t seed, const std::string& component);

// ---- additions: the pieces above, exposed for tests and reports ----

struct RandomInit {
  float mean = 0;
  float std = 1;
};
// The distribution randomWeights uses for this tensor (the rule above).
RandomInit randomInit(const std::string& name, const std::vector<int64_t>& shape);

// One entry of the single-file key map.
struct LdmKey {
  std::string diffusers;           // name inside the diffusers component
  std::string ldm;                 // full key in the single file ("model.diffusion_model.input_blocks.1.0...")
  std::vector<int64_t> shape;      // diffusers' shape, from the config
  bool convToLinear = false;       // LDM stores [C, C, 1, 1] (1x1 conv), diffusers [C, C] (Linear)
};
// The maps convert_ldm_unet_checkpoint / convert_ldm_vae_checkpoint apply, generated
// from the config (SD 1.x / 2.x UNet2DConditionModel, AutoencoderKL). Throws Error for a
// config feature the LDM layout has no keys for (class embeddings, other block types).
std::vector<LdmKey> ldmUnetKeyMap(const nlohmann::json& unetConfig);
std::vector<LdmKey> ldmVaeKeyMap(const nlohmann::json& vaeConfig);

// openSingleFileWeights with a given key map instead of the config's (tests: a
// deliberately wrong map must be caught). For the text encoder an empty map means the
// usual prefix rule.
std::unique_ptr<WeightSource> openSingleFileWeightsWithMap(const std::string& file, const std::string& component,
                                                           std::vector<LdmKey> keys);

// Keys of a single-file checkpoint that none of the three components reads, other than
// the documented extras a loader ignores: EMA weights ("model_ema.*"), the schedule
// buffers (betas, alphas_cumprod, ...), "cond_stage_model.transformer.text_model.embeddings.position_ids",
// the VAE training loss ("first_stage_model.loss.*").
std::vector<std::string> unmappedSingleFileTensors(const std::string& file, const nlohmann::json& unetConfig,
                                                   const nlohmann::json& vaeConfig);

}  // namespace sdspeed
