// Weight sources backed by safetensors files (pipeline/weights.h): a diffusers folder,
// or a single-file LDM checkpoint through the key map of ldm_key_map.cpp. The files
// are memory-mapped (SafetensorsFile); a tensor is converted to float only when loaded.
#include "pipeline/weights.h"

#include "pipeline/gguf.h"
#include "pipeline/quantized_file.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "pipeline/safetensors.h"
#include "runtime/error.h"

namespace sdspeed {

using Shape = std::vector<int64_t>;

namespace {

const char* const kTextModel = "text_model.";
const char* const kLdmText = "cond_stage_model.transformer.";

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::string shapeStr(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

void checkComponent(const std::string& component) {
  if (component != "unet" && component != "vae" && component != "text_encoder")
    throw Error("weights: unknown component '" + component + "' (unet, vae, text_encoder)");
}

// The text encoder's names with and without the "text_model." level (transformers 5.x
// drops it when saving CLIPTextModel): the name as asked first.
std::vector<std::string> nameCandidates(const std::string& name, bool textEncoder) {
  if (!textEncoder) return {name};
  if (startsWith(name, kTextModel)) return {name, name.substr(std::string(kTextModel).size())};
  return {name, kTextModel + name};
}

// The canonical (text_model.-prefixed) text encoder name.
std::string canonicalText(const std::string& name) { return startsWith(name, kTextModel) ? name : kTextModel + name; }

// Checks dtype and shape, then converts. `where` names the file and the tensor.
std::vector<float> readChecked(const SafetensorsFile& file, const TensorInfo& t, const Shape& diskAsDiffusers,
                               const Shape& want, const std::string& where) {
  if (!dtypeIsFloat(t.dtype))
    throw Error(where + "dtype " + dtypeName(t.dtype) + " is not a weight dtype (F32, F16, BF16)");
  if (diskAsDiffusers != want)
    throw Error(where + "shape " + shapeStr(diskAsDiffusers) + " in the file, but " + shapeStr(want) + " expected");
  return file.toFloat(t.name);
}

// ---- diffusers folder ----

class FolderSource : public WeightSource {
 public:
  FolderSource(const std::string& path, bool textEncoder) : file_(path), text_(textEncoder) {}

  std::vector<float> load(const std::string& name, const Shape& shape) const override {
    const TensorInfo& t = find(name);
    if (const auto q = quantizedTensor(file_, t)) {  // `sdspeed quantize` blocks: their values
      if (q->shape != shape)
        throw Error(where(name) + "shape " + shapeStr(q->shape) + " in the file, but " + shapeStr(shape) + " expected");
      const auto b = file_.bytes(t.name);
      return quant::dequantizeMatrix(q->layout(), reinterpret_cast<const uint8_t*>(b.data()), b.size(), where(name));
    }
    return readChecked(file_, t, t.shape, shape, where(name));
  }
  bool has(const std::string& name) const override { return lookup(name) != nullptr; }
  std::string describe() const override { return file_.path(); }
  std::string diskDType(const std::string& name) const override {
    const TensorInfo& t = find(name);
    if (const auto q = quantizedTensor(file_, t)) return q->format == quant::Format::Q8_0 ? "Q8_0" : "Q4_0";
    return dtypeName(t.dtype);
  }
  std::span<const std::byte> mappedBytes(const std::string& name, const std::string& dtype) const override {
    const TensorInfo& t = find(name);
    return diskDType(name) == dtype ? file_.bytes(t.name) : std::span<const std::byte>{};
  }
  std::vector<int64_t> storedShape(const std::string& name) const override {
    const TensorInfo& t = find(name);
    if (const auto q = quantizedTensor(file_, t)) return q->shape;
    return t.shape;
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const TensorInfo& t : file_.tensors()) out.push_back(text_ ? canonicalText(t.name) : t.name);
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::string where(const std::string& name) const {
    return "weights '" + file_.path() + "': tensor '" + name + "': ";
  }
  const TensorInfo* lookup(const std::string& name) const {
    for (const std::string& n : nameCandidates(name, text_))
      if (file_.contains(n)) return &file_.info(n);
    return nullptr;
  }
  const TensorInfo& find(const std::string& name) const {
    if (const TensorInfo* t = lookup(name)) return *t;
    throw Error(where(name) + "not in the file");
  }

  SafetensorsFile file_;
  bool text_;
};

// ---- single-file LDM checkpoint ----

// diffusers' shape of an LDM tensor: 1x1 conv weights [C, C, 1, 1] become Linear [C, C]
// where the map says so (a file already holding [C, C] is taken as is).
Shape asDiffusers(const Shape& disk, bool convToLinear) {
  if (convToLinear && disk.size() == 4 && disk[2] == 1 && disk[3] == 1) return {disk[0], disk[1]};
  return disk;
}

class SingleFileSource : public WeightSource {
 public:
  SingleFileSource(const std::string& path, const std::string& component, std::vector<LdmKey> keys)
      : file_(path), component_(component) {
    const bool text = component == "text_encoder";
    if (text && keys.empty()) keys = textEncoderKeys();
    std::vector<std::string> problems;
    for (LdmKey& k : keys) {
      if (!file_.contains(k.ldm)) {
        problems.push_back("'" + k.ldm + "' (" + k.diffusers + ") missing");
      } else if (Shape s = asDiffusers(file_.info(k.ldm).shape, k.convToLinear); s != k.shape) {
        problems.push_back("'" + k.ldm + "' (" + k.diffusers + ") has shape " + shapeStr(s) + ", the config gives " +
                           shapeStr(k.shape));
      }
      if (map_.count(k.diffusers))
        throw Error("weights '" + path + "': the " + component + " key map names '" + k.diffusers + "' twice");
      std::string name = k.diffusers;
      map_.emplace(std::move(name), std::move(k));
    }
    if (text && map_.empty())
      throw Error("weights '" + path + "': no CLIP text encoder (" + kLdmText +
                  "*) in the file; only SD 1.x single files (transformers CLIPTextModel) are supported");
    if (!problems.empty()) {
      std::string msg = "weights '" + path + "': the " + component + " config does not match the checkpoint: " +
                        std::to_string(problems.size()) + " of " + std::to_string(map_.size()) + " tensors differ:";
      for (size_t i = 0; i < problems.size() && i < 5; ++i) msg += " " + problems[i] + ";";
      if (problems.size() > 5) msg += " ...";
      throw Error(msg);
    }
  }

  std::vector<float> load(const std::string& name, const Shape& shape) const override {
    const LdmKey& k = find(name);
    const TensorInfo& t = file_.info(k.ldm);
    return readChecked(file_, t, asDiffusers(t.shape, k.convToLinear), shape,
                       where(name) + "(LDM key '" + k.ldm + "'): ");
  }
  bool has(const std::string& name) const override { return lookup(name) != nullptr; }
  std::string describe() const override { return file_.path() + " (" + component_ + ", LDM keys)"; }
  std::string diskDType(const std::string& name) const override { return dtypeName(file_.info(find(name).ldm).dtype); }
  std::span<const std::byte> mappedBytes(const std::string& name, const std::string& dtype) const override {
    const std::string& ldm = find(name).ldm;
    return dtypeName(file_.info(ldm).dtype) == dtype ? file_.bytes(ldm) : std::span<const std::byte>{};
  }
  std::vector<int64_t> storedShape(const std::string& name) const override {
    const LdmKey& k = find(name);
    return asDiffusers(file_.info(k.ldm).shape, k.convToLinear);
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [name, key] : map_) out.push_back(name);
    return out;
  }

 private:
  std::string where(const std::string& name) const {
    return "weights '" + file_.path() + "': tensor '" + name + "': ";
  }
  const LdmKey* lookup(const std::string& name) const {
    for (const std::string& n : nameCandidates(name, component_ == "text_encoder"))
      if (auto it = map_.find(n); it != map_.end()) return &it->second;
    return nullptr;
  }
  const LdmKey& find(const std::string& name) const {
    if (const LdmKey* k = lookup(name)) return *k;
    throw Error(where(name) + "not in the " + component_ + " key map of this checkpoint (" +
                std::to_string(map_.size()) + " tensors)");
  }
  // The CLIP text encoder is stored under "cond_stage_model.transformer." + its
  // transformers name (diffusers' convert_ldm_clip_checkpoint strips that prefix).
  std::vector<LdmKey> textEncoderKeys() const {
    std::vector<LdmKey> out;
    for (const TensorInfo& t : file_.tensors()) {
      if (!startsWith(t.name, kLdmText) || t.name.ends_with("embeddings.position_ids")) continue;
      out.push_back({canonicalText(t.name.substr(std::string(kLdmText).size())), t.name, t.shape, false});
    }
    return out;
  }

  SafetensorsFile file_;
  std::string component_;
  std::map<std::string, LdmKey> map_;  // by diffusers name
};

// Extras of real single-file checkpoints that no component reads.
bool ignorableLdmKey(const std::string& key) {
  static const std::set<std::string> kSchedule = {
      "betas", "alphas_cumprod", "alphas_cumprod_prev", "sqrt_alphas_cumprod", "sqrt_one_minus_alphas_cumprod",
      "log_one_minus_alphas_cumprod", "sqrt_recip_alphas_cumprod", "sqrt_recipm1_alphas_cumprod",
      "posterior_variance", "posterior_log_variance_clipped", "posterior_mean_coef1", "posterior_mean_coef2",
      "logvar"};
  return kSchedule.count(key) || startsWith(key, "model_ema.") || startsWith(key, "first_stage_model.loss.") ||
         (startsWith(key, kLdmText) && key.ends_with("embeddings.position_ids"));
}

}  // namespace

std::unique_ptr<WeightSource> openFolderWeights(const std::string& modelDir, const std::string& component) {
  checkComponent(component);
  const std::string stem = component == "text_encoder" ? "model" : "diffusion_pytorch_model";
  const std::string base = modelDir + "/" + component + "/" + stem;
  std::error_code ec;
  for (const std::string& path : {base + ".safetensors", base + ".fp16.safetensors"})
    if (std::filesystem::exists(path, ec))
      return std::make_unique<FolderSource>(path, component == "text_encoder");
  throw Error("weights: no " + component + " weights in '" + modelDir + "': neither '" + base +
              ".safetensors' nor '" + base + ".fp16.safetensors' exists");
}

// ---- GGUF (stable-diffusion.cpp's files: LDM names, per-tensor types) ----

class GgufSource : public WeightSource {
 public:
  GgufSource(const std::string& path, const std::string& component, std::vector<LdmKey> keys)
      : file_(path), component_(component) {
    if (component == "text_encoder")
      for (const GgufTensor& t : file_.tensors())
        if (startsWith(t.name, kLdmText) && !t.name.ends_with("embeddings.position_ids"))
          keys.push_back({canonicalText(t.name.substr(std::string(kLdmText).size())), t.name, t.shape, false});
    for (LdmKey& k : keys) {
      std::string name = k.diffusers;
      map_.emplace(std::move(name), std::move(k));
    }
  }
  std::vector<float> load(const std::string& name, const Shape& shape) const override {
    const GgufTensor& t = tensor(name);
    const Shape disk = asDiffusers(t.shape, find(name).convToLinear);
    if (disk != shape)
      throw Error(where(name) + "shape " + shapeStr(disk) + " in the file, but " + shapeStr(shape) + " expected");
    return file_.toFloat(t);
  }
  bool has(const std::string& name) const override { return lookup(name) && file_.find(lookup(name)->ldm); }
  std::string describe() const override { return file_.path() + " (" + component_ + ", GGUF, LDM keys)"; }
  std::string diskDType(const std::string& name) const override { return tensor(name).typeName(); }
  // Q8_0 / Q4_0 blocks are sdspeed's int8/int4 rows when ggml's rows (the innermost
  // dimension) are the output channel's whole reduction: a Linear [out, in]. The executor
  // compares the size with what it needs, so a conv's would not be taken.
  std::span<const std::byte> mappedBytes(const std::string& name, const std::string& dtype) const override {
    const GgufTensor& t = tensor(name);
    return t.typeName() == dtype ? file_.bytes(t) : std::span<const std::byte>{};
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [n, k] : map_)
      if (file_.find(k.ldm)) out.push_back(n);
    return out;
  }

 private:
  std::string where(const std::string& name) const { return "weights '" + file_.path() + "': tensor '" + name + "': "; }
  const LdmKey* lookup(const std::string& name) const {
    for (const std::string& n : nameCandidates(name, component_ == "text_encoder"))
      if (auto it = map_.find(n); it != map_.end()) return &it->second;
    return nullptr;
  }
  const LdmKey& find(const std::string& name) const {
    if (const LdmKey* k = lookup(name)) return *k;
    throw Error(where(name) + "not in the " + component_ + " key map");
  }
  const GgufTensor& tensor(const std::string& name) const {
    const LdmKey& k = find(name);
    if (const GgufTensor* t = file_.find(k.ldm)) return *t;
    throw Error(where(name) + "LDM key '" + k.ldm + "' not in the file");
  }

  GgufFile file_;
  std::string component_;
  std::map<std::string, LdmKey> map_;
};

std::unique_ptr<WeightSource> openSingleFileWeights(const std::string& file, const std::string& component,
                                                     const nlohmann::json& unetConfig,
                                                     const nlohmann::json& vaeConfig) {
  checkComponent(component);
  if (file.ends_with(".gguf")) {
    std::vector<LdmKey> keys;
    if (component == "unet") keys = ldmUnetKeyMap(unetConfig);
    if (component == "vae") keys = ldmVaeKeyMap(vaeConfig);
    return std::make_unique<GgufSource>(file, component, std::move(keys));
  }
  std::vector<LdmKey> keys;
  if (component == "unet") keys = ldmUnetKeyMap(unetConfig);
  if (component == "vae") keys = ldmVaeKeyMap(vaeConfig);
  return std::make_unique<SingleFileSource>(file, component, std::move(keys));
}

std::unique_ptr<WeightSource> openSingleFileWeightsWithMap(const std::string& file, const std::string& component,
                                                           std::vector<LdmKey> keys) {
  checkComponent(component);
  return std::make_unique<SingleFileSource>(file, component, std::move(keys));
}

std::vector<std::string> unmappedSingleFileTensors(const std::string& file, const nlohmann::json& unetConfig,
                                                   const nlohmann::json& vaeConfig) {
  // The file's tensor names, from either container openSingleFileWeights reads.
  std::vector<std::string> names;
  // (Named files: a temporary's tensors() would dangle in a range-for before C++23.)
  if (file.ends_with(".gguf")) {
    const GgufFile g(file);
    for (const GgufTensor& t : g.tensors()) names.push_back(t.name);
  } else {
    const SafetensorsFile f(file);
    for (const TensorInfo& t : f.tensors()) names.push_back(t.name);
  }
  std::set<std::string> mapped;
  for (const auto& map : {ldmUnetKeyMap(unetConfig), ldmVaeKeyMap(vaeConfig)})
    for (const LdmKey& k : map) mapped.insert(k.ldm);
  std::vector<std::string> out;
  for (const std::string& n : names)
    if (!mapped.count(n) && !startsWith(n, kLdmText) && !ignorableLdmKey(n)) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace sdspeed
