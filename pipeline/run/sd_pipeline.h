// The three components of a Stable Diffusion model on one device: configs, weights
// (diffusers folder, single-file LDM checkpoint, or seeded random), one graph and
// executor per component, built on first use. Tensors cross this API in torch's
// layouts (text embeddings [B, S, C], latents and images NCHW), as diffusers' own
// tensors and the reference fixtures are.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pipeline/exec/graph_executor.h"
#include "pipeline/model/model_config.h"
#include "pipeline/model/sd_graphs.h"

namespace sdspeed {

struct ModelSource {
  std::string configDir;   // DIR/{unet,vae,text_encoder}/config.json, DIR/scheduler/scheduler_config.json
  std::string weightsDir;  // a diffusers folder with weights (empty: single file or random)
  std::string singleFile;  // an original-format (LDM) checkpoint
  bool random = false;     // seeded random weights
  uint64_t seed = 0;
  std::string describe() const;
};

struct ComponentStats {
  std::string name;
  RunTiming last;       // the last run
  ExecMemory memory;
  int nodes = 0;
};

class SdPipeline {
 public:
  // batch: the UNet's and text encoder's batch (2 with classifier-free guidance).
  SdPipeline(Context& ctx, ModelSource source, ExecOptions exec, int64_t latentH, int64_t latentW, int64_t batch);
  ~SdPipeline();

  const UNetConfig& unetConfig() const { return unet_; }
  const VaeConfig& vaeConfig() const { return vae_; }
  const ClipConfig& clipConfig() const { return clip_; }
  int64_t latentH() const { return latentH_; }
  int64_t latentW() const { return latentW_; }
  int64_t batch() const { return batch_; }
  int64_t tokens() const { return clip_.positions; }
  // The sub-buffer alignment the executors plan with (bytes).
  uint64_t alignment() const { return ctx_.subBufferAlignment(); }

  // ids: batch rows of tokens() ids -> [batch, tokens, hidden].
  std::vector<float> encodeText(const std::vector<int64_t>& ids);
  // sample [batch, 4, h, w], context [batch, L, cross_attention_dim] -> noise [batch, 4, h, w].
  std::vector<float> predictNoise(const std::vector<float>& sample, float timestep, const std::vector<float>& context,
                                  bool profile = false);
  // latents [1, 4, h, w] as the scheduler leaves them (divided by the scaling factor
  // here) -> decoded [1, 3, H, W], not clamped.
  std::vector<float> decode(const std::vector<float>& latents, bool profile = false);

  // The component's graph and executor (built on first use).
  GraphExecutor& executor(const std::string& component);
  ComponentStats stats(const std::string& component);
  bool built(const std::string& component) const;

 private:
  struct Part;
  Part& part(const std::string& component);
  std::unique_ptr<WeightSource> weightsFor(const std::string& component) const;

  Context& ctx_;
  ModelSource src_;
  ExecOptions exec_;
  int64_t latentH_, latentW_, batch_;
  UNetConfig unet_;
  VaeConfig vae_;
  ClipConfig clip_;
  std::vector<std::unique_ptr<Part>> parts_;
};

}  // namespace sdspeed
