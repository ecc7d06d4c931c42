// The three components of a Stable Diffusion model on one device: configs, weights
// (diffusers folder, single-file LDM checkpoint, or seeded random), one graph and
// executor per component, built on first use and freed by release() (a later use
// builds it again), so a run can hold one component at a time. Tensors cross this API in torch's
// layouts (text embeddings [B, S, C], latents and images NCHW), as diffusers' own
// tensors and the reference fixtures are.
#pragma once

#include <map>
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

// A component's weights ("unet", "vae", "text_encoder") from the source: random, the
// single file through its key map, or the folder's safetensors.
std::unique_ptr<WeightSource> openModelWeights(const ModelSource& src, const std::string& component);

// A VAE decode in overlapping tiles (diffusers' enable_vae_tiling idea, with evenly
// spread tiles of one size so one graph serves them all): each tile's output is weighted
// by linear ramps across its overlaps with its neighbours and the weighted sum
// normalized. GroupNorm's statistics and the mid-block's attention then see one tile,
// not the image: the seam measures how much that changes.
struct VaeTiling {
  int64_t tileH = 0, tileW = 0;  // latent pixels; 0: not tiled
  int64_t overlap = 0;           // the least overlap between neighbours (latent pixels)
  std::vector<int64_t> ys, xs;   // tile origins (latent pixels)
  std::string why;               // "--vae-tile N" or "memory budget"
  // Where a tile overlaps the tiles decoded before it: how far adding it moved the blend
  // there (its weight times its difference from the blend so far, over the summed
  // weights), over the last decode: a measure of the seams with no untiled decode to
  // compare with. A tile's border (zero padding) disagrees most but weighs least.
  double seamMaxAbs = 0, seamRms = 0;
  bool tiled() const { return tileH > 0; }
  int tiles() const { return static_cast<int>(ys.size() * xs.size()); }
  std::string describe() const;
};

// Evenly spread origins of tiles of `tile` covering [0, size) with neighbours
// overlapping by at least `overlap` (one tile when it covers all).
std::vector<int64_t> tileOrigins(int64_t size, int64_t tile, int64_t overlap);
// The overlap tiles of an image whose longer latent side is `side` keep.
int64_t tileOverlap(int64_t side);

// What a component ran with; kept when it is released, so reports can still read it.
struct ComponentStats {
  std::string name;
  RunTiming last;       // the last run
  ExecMemory memory;
  int nodes = 0;
  std::vector<std::string> families;  // per node: its op family's name
  std::vector<NodeChoice> choices;    // per node: the variant it ran with, and why
  // The device high-water mark above what was live when this component began loading,
  // until it was released or the next component began loading: its own footprint
  // (weights, arena, scratch, and anything its first runs allocate).
  uint64_t deviceBytes = 0;
  VaeTiling tiling;       // vae_decoder: how it decoded
  bool resident = false;  // its executor is held now
  int loads = 0;          // how many times it was built
};

// Every tensor of the component's checkpoint is one its graph reads (or a known extra:
// a VAE file's encoder, transformers' position_ids): else one Error naming the file and
// the first unexplained tensor, unless allowExtra (--allow-extra-weights).
void requireWeightsExplained(const Graph& g, const WeightSource& w, const std::string& component, bool allowExtra);

class SdPipeline {
 public:
  // batch: the UNet's and text encoder's batch (2 with classifier-free guidance).
  SdPipeline(Backend& ctx, ModelSource source, ExecOptions exec, int64_t latentH, int64_t latentW, int64_t batch);
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

  // The component's graph and executor (built on first use, or again after release()).
  GraphExecutor& executor(const std::string& component);
  // Its graph, executor and weights upload, if not resident.
  void load(const std::string& component) { part(component); }
  // One run on zero inputs (GraphExecutor::warmUp), once per build: loads it first; then
  // more until minMs of wall time has passed since the first began (at most
  // kMaxWarmUpRuns in all). Returns the runs made (0: warmed up already).
  int warmUp(const std::string& component, double minMs = 0);
  static constexpr int kMaxWarmUpRuns = 50;
  // Frees the component's executor and graph: weights, activation arena, scratch and
  // kernels leave the device (and the context's live count). Its stats stay readable;
  // nothing happens if it is not resident.
  void release(const std::string& component);
  // The resident component's stats now, else those it had when released; builds a
  // component never built.
  ComponentStats stats(const std::string& component);
  // Built at least once (stats exist), and resident now.
  bool built(const std::string& component) const;
  bool resident(const std::string& component) const;

 private:
  struct Part;
  Part& part(const std::string& component);
  Part* find(const std::string& component) const;
  std::unique_ptr<Part> build(const std::string& component);
  void buildVae(Part& p, const WeightSource& weights, const ExecOptions& opt);
  std::vector<float> decodeTiled(Part& p, const std::vector<float>& z, bool profile);
  ComponentStats snapshot(const Part& p) const;
  void closeWindow();
  std::unique_ptr<WeightSource> weightsFor(const std::string& component) const;

  Backend& ctx_;  // the device it runs on, whatever the API
  ModelSource src_;
  ExecOptions exec_;
  int64_t latentH_, latentW_, batch_;
  UNetConfig unet_;
  VaeConfig vae_;
  ClipConfig clip_;
  std::vector<std::unique_ptr<Part>> parts_;   // resident components
  std::map<std::string, ComponentStats> kept_;  // released components' last stats
  // The footprint window of the component that began loading last (one at a time: a
  // new load closes the previous one's).
  std::unique_ptr<PeakWindow> window_;
  std::string windowOwner_;
};

}  // namespace sdspeed
