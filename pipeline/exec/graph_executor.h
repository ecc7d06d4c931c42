// Runs a component graph on one device: every op through its kernel family, with the
// variant and parameters the device's tuning database names for its op instance
// (or a --variant override, using that variant's own tuned parameters), falling back
// to another variant when the chosen one cannot run the instance. Activations live
// in memory the planner assigned (one arena, sub-buffers per tensor), weights in
// their own buffers.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "pipeline/model/graph.h"
#include "pipeline/weights.h"
#include "runtime/memory_planner.h"
#include "runtime/memory_size.h"
#include "pipeline/exec/weight_stream.h"
#include "runtime/backend.h"
#include "tuning/database.h"

namespace sdspeed {

struct ExecOptions {
  // Activations (buffer storage), and in format.weights the weights' precision for every
  // component not in componentWeights. Weights are float32 on the host (WeightSource)
  // and rounded to nearest even on upload when f16.
  StorageFormat format;
  // Per-component weight format ("text_encoder", "unet", "vae_decoder"), from
  // --weights f16,vae_decoder=f32.
  std::map<std::string, DType> componentWeights;
  // Per layer kind (weight_kinds.h), every component's ("conv") or one component's
  // ("unet.attn"), from --weights int4,conv=int8,unet.attn=f16. Most specific wins:
  // component.kind > kind > component > format.weights (weightFormatFor).
  std::map<std::string, DType> kindWeights;
  std::string dbDir = "configs/tuned";             // the tuning databases
  // family -> the variants allowed (a --variant override is a list of one): among
  // them the database's fastest for each instance when it times all of them exactly,
  // else the last allowed one that can run it.
  std::map<std::string, std::vector<std::string>> variants;
  // false: GroupNorm+SiLU and GEMM+activation run as separate kernels (the
  // ablation's baseline); graph building reads it.
  bool fuseActivations = true;
  std::string planner = "greedy-by-size";          // a PlanStrategy name, or "none" (one buffer per tensor)
  // Ops' scratch (Winograd planes, im2col columns, attention scores, split partials) in
  // the planner's arena, alive for its op alone; false: each op allocates its own and
  // keeps it (the behaviour before scratch was planned). Ignored with planner "none".
  bool planScratch = true;
  // Convolutions' derived weights (Winograd transforms, packed GEMM weights): kept
  // resident after the first call, or made per call into planned scratch.
  bool derivedWeightsPerCall = false;
  // The component's device footprint may not exceed this (bytes; 0: no limit). Under
  // it the executor first makes derived weights per call (largest first), then switches
  // scratch-hungry ops to their least-scratch variant, then streams weights (largest first): they stay in host memory and are uploaded just ahead of
  // the op that reads them, on a second queue. Too small a budget is an Error naming
  // the smallest one that works.
  uint64_t memoryBudget = 0;
  // Streamed weights go from their (pageable) host copies through a small ring of pinned
  // staging buffers (Context::HostStaging, counted in the footprint: a few slots of at
  // most 32 MiB), filled by several host threads, so each upload is a DMA that overlaps
  // kernels; false: straight from the pageable copies (the driver stages them through
  // its own buffers, serially: the behaviour before the ring, kept for the measurement).
  bool pinnedStaging = true;
  uint64_t stagingSlotBytes = 32ull << 20;  // the ring's largest slot (tests make it small: chunked uploads)
  // false: a budget that the first two steps cannot meet fails (BudgetNeedsStreaming)
  // instead of streaming weights; the pipeline then tries a tiled VAE decode first.
  bool budgetMayStream = true;
  // The VAE decodes in overlapping tiles of this many latent pixels a side (diffusers'
  // enable_vae_tiling idea; the pipeline does it, SdPipeline::decode); 0: only when a
  // memory budget cannot be met otherwise (the budget's third step).
  int64_t vaeTile = 0;
  // Diagnostic: bind planned tensors through one sub-buffer each (the binding before
  // offsets were kernel arguments) instead of the arena and an offset.
  bool arenaSubBuffers = false;
  // Diagnostic (--check-finite, slow): run() finishes the queue after every op and
  // downloads its output, failing with one Error naming the first op (label and
  // instance) whose output holds a NaN or infinity.
  bool checkFinite = false;
  // Checkpoint tensors the configs do not explain (more layers than the config, a block
  // it lacks) are ignored instead of refused (--allow-extra-weights; SdPipeline checks).
  bool allowExtraWeights = false;
  // Ops that depend only on steady inputs (Graph::markSteady: the UNet's text context) and
  // weights run once, when those inputs get new values; later runs reuse their outputs,
  // kept alive across runs (--context-ops once). false: every op runs every call
  // (--context-ops every-step, the behaviour before).
  bool reuseSteadyOps = true;
};

// The weight format `component` runs with: its override, else opt.format.weights.
inline DType componentWeightFormat(const ExecOptions& opt, const std::string& component) {
  auto it = opt.componentWeights.find(component);
  return it == opt.componentWeights.end() ? opt.format.weights : it->second;
}
// The weight format of the ops of layer kind `kind` (weight_kinds.h; "" for ops of no
// kind) in `component`: "component.kind", else "kind", else the component's format.
inline DType weightFormatFor(const ExecOptions& opt, const std::string& component, const std::string& kind) {
  if (!kind.empty()) {
    if (auto it = opt.kindWeights.find(component + "." + kind); it != opt.kindWeights.end()) return it->second;
    if (auto it = opt.kindWeights.find(kind); it != opt.kindWeights.end()) return it->second;
  }
  return componentWeightFormat(opt, component);
}
// The pipeline's components, for --weights COMPONENT=FORMAT.
inline const std::vector<std::string>& pipelineComponents() {
  static const std::vector<std::string> c{"text_encoder", "unet", "vae_decoder"};
  return c;
}
// Parses "FORMAT[,KEY=FORMAT..]" (--weights, the ablation's `weights` key; FORMAT
// f32|f16|int8|int4, KEY a component, a layer kind or component.kind) into
// opt.format.weights, opt.componentWeights and opt.kindWeights; throws one Error naming
// `what` and the bad part for an unknown format, component or kind, a key given twice
// or a second default.
void parseWeightsSpec(const std::string& text, const std::string& what, ExecOptions& opt);
// The spec back as text: the default, then components in pipeline order (only those
// that differ), then the kind keys (kinds, then component.kind, each in key order).
std::string weightsSpecText(const ExecOptions& opt);
// Each node's format in `component`: `format` with the node's weight format
// (weightFormatFor its kind). The executor and `sdspeed quantize` share it.
std::vector<StorageFormat> graphNodeFormats(const Graph& graph, const StorageFormat& format, const ExecOptions& opt);

// The tensor's values fit f16 (|x| <= 65504, the largest finite half): else one Error
// naming the component, the tensor and the value, suggesting --weights COMPONENT=f32.
// f16 rounding would make such a value inf, silently.
void checkFitsF16(const std::vector<float>& values, const std::string& component, const std::string& tensor);
// Every value is finite: else one Error naming the component, the tensor and the first
// NaN/inf's element index. Applies to every weight format: a NaN in a checkpoint
// otherwise becomes an all-NaN image with exit status 0.
void checkFiniteWeight(const std::vector<float>& values, const std::string& component, const std::string& tensor);


// Each graph tensor's format when it is a weight (by tensor id): the format of the slot
// that reads it (slotFormat): under int8/int4 blocks for a quantizable slot (GEMM's and
// conv's matrices), f16 for every other weight (kernels/QUANTIZATION.md); others get
// format.params(). `why` (optional) gets, per weight left unquantized, the reason
// ("conv bias: not a matrix weight", "groupnorm: no int8 kernel path"). The executor and
// `sdspeed quantize` share it, so a quantized file holds blocks exactly where a run
// quantizes at load. Throws Error for a weight two slots read in different formats.
std::vector<StorageFormat> graphWeightFormats(const Graph& graph, const StorageFormat& format,
                                              std::vector<std::string>* why = nullptr);
// The same with each node's own format (graphNodeFormats: per layer kind).
std::vector<StorageFormat> graphWeightFormats(const Graph& graph, const std::vector<StorageFormat>& nodeFormats,
                                              std::vector<std::string>* why = nullptr);

// What one node runs with, and why.
struct NodeChoice {
  std::string instance;  // OpInstance text
  std::string variant, params, source;
  uint64_t scratchBytes = 0;       // the op's own scratch (its peak besides its tensors)
  uint64_t derivedWeightBytes = 0; // resident derived weights (0 when made per call)
  bool derivedPerCall = false;
  uint64_t streamedBytes = 0;      // weight bytes uploaded ahead of this op per run
};

// Why a (variant, point) cannot run an op instance here ("" = it can): the device
// rules, the arithmetic, the problem and the backend's kernels (loweringGap).
using ChoiceRefusal = std::function<std::string(const TunedChoice&)>;
// The executor's refusal: the family's rules (Family::unsupportedReason), a point this
// build no longer parses ("stale tuned point: ..."), then the backend's kernels
// (loweringGap; a driver error there propagates). `tune --model` asks the same.
std::string whyNotRunnable(const Family& fam, const TunedChoice& c, const Problem& prob, const StorageFormat& f,
                           Backend& be);

// The executor's choice for one op instance, without a backend (tests pass their own
// refusals). Without an allowed list: the database's choice (exact, nearest, device or
// vendor default) when one answers and can run; when none answers, the family's default
// order (defaultOrder: VariantDef::defaultRank), the first variant that can run. With
// one (an ablation row's): the fastest allowed variant when exact entries time every
// allowed one that can run, else the last allowed one that can. When nothing chosen can
// run: the first variant in the default order that can, its source marked "fallback";
// nullopt when none can (`refused` holds the first refusal).
std::optional<NodeChoice> chooseVariant(const TunedChooser& chooser, const Family& fam, const OpInstance& inst,
                                        const std::vector<std::string>* allowed, const ChoiceRefusal& whyNot,
                                        std::string& refused);

struct NodeTime {
  int node = 0;
  double us = 0;  // first kernel start to last kernel end
};

struct RunTiming {
  double deviceMs = 0;  // first kernel start of the first op to last kernel end of the last
  int reusedOps = 0;    // steady ops not run: their outputs came from an earlier run
  double wallMs = 0;    // host: first enqueue to finish
  std::vector<NodeTime> nodes;  // filled when profiling
  // The run's commands and the barriers before them (Backend::syncCounts; 0 where not counted).
  uint64_t dispatches = 0, barriers = 0;
};

struct ExecMemory {
  uint64_t weightBytes = 0;         // weights resident on the device (streamed ones not counted)
  uint64_t derivedWeightBytes = 0;  // resident derived weights (Winograd transforms, packed weights)
  uint64_t scratchBytes = 0;        // the sum of every op's scratch (what unplanned scratch holds)
  uint64_t scratchPeakBytes = 0;    // the largest op's scratch: planned scratch's lower bound
  uint64_t plannedScratchBytes = 0; // what planned scratch adds to the arena (0 when not planned)
  uint64_t activationBytes = 0;     // the chosen plan's device memory: activations (+ planned scratch, streamed weights)
  uint64_t streamedBytes = 0;       // weight bytes uploaded per run (streaming)
  uint64_t streamedOnceBytes = 0;   // streamed weights only steady ops read (the text context's K and V):
                                    // uploaded when those run, once per image; not in streamedBytes
  uint64_t stagingHostBytes = 0;    // their packed host copies (host memory, not in the device count)
  uint64_t streamedMappedBytes = 0; // ... uploaded from the mapped checkpoint instead (no copy)
  uint64_t stagingRingBytes = 0;    // the pinned staging ring they pass through (counted)
  uint64_t otherBytes = 0;          // host inputs and placeholders for unused slots
  uint64_t estimatedBytes = 0;      // the component's footprint, estimated before allocating
  uint64_t budgetBytes = 0;         // ExecOptions::memoryBudget
  std::vector<std::string> budgetChoices;  // what the budget forced, in order
  std::map<std::string, uint64_t> planBytes;  // every strategy's plan (name -> bytes), "lower-bound" too
  // Under int8/int4 weights: the weights by stored format, and for the unquantized ones
  // why ("int8", "f16 (conv: no int8 kernel path)", "f16 (gemm bias: not a matrix weight)").
  struct WeightGroup {
    int tensors = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, WeightGroup> weightGroups;
  // Every op's matrix weight (and its bias) by layer kind (weight_kinds.h), in any weight
  // format: what a --weights KIND=FORMAT override changes.
  struct KindGroup {
    std::string format;  // the kind's weight format (its matrix weights')
    int tensors = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, KindGroup> weightKinds;
  uint64_t quantizedFromFileBytes = 0;  // int8/int4 blocks uploaded as `sdspeed quantize` wrote them
  uint64_t floatFromFileBytes = 0;      // f32/f16 weights uploaded as the file holds them (same dtype)
};

// The activations of a graph as the planner sees them: one record per tensor that
// owns memory (views extend their base's lifetime; inputs live from op 0, outputs to
// the last op), sized in `format`. `persistent` (by tensor id, optional): tensors alive
// for the whole run, from op 0 to the last (what reused steady ops leave for the others:
// their outputs, and steady inputs a non-steady op reads).
struct ActivationUsage {
  std::vector<TensorUsage> records;
  std::vector<int> tensors;  // the graph tensor of each record
};
ActivationUsage activationUsage(const Graph& graph, const StorageFormat& format,
                                const std::vector<bool>* persistent = nullptr);
// Every strategy's plan size (by planStrategyName) and "lower-bound".
std::map<std::string, uint64_t> planSizes(const ActivationUsage& usage, uint64_t alignment);

// The budget cannot be met without streaming weights while ExecOptions::budgetMayStream
// is false; estimatedBytes is the footprint reached without streaming.
struct BudgetNeedsStreaming : Error {
  BudgetNeedsStreaming(const std::string& what, uint64_t bytes) : Error(what), estimatedBytes(bytes) {}
  uint64_t estimatedBytes;
};

class GraphExecutor {
 public:
  // Prepares every op (programs come from the cache) and uploads the weights. `weights`
  // must outlive the executor: streamed weights stored on disk as the run's weight dtype
  // are uploaded from its memory-mapped pages (WeightSource::mappedBytes).
  GraphExecutor(Backend& backend, const Graph& graph, const WeightSource& weights, const ExecOptions& options);
  ~GraphExecutor();

  // One run on zero inputs: what the first run of an op pays once (Winograd weight
  // transforms, the driver's first touch of scratch memory) goes into setup, not into
  // the timed runs. Inputs must be set again afterwards.
  void warmUp();
  void setInput(const std::string& name, const std::vector<float>& nchw);
  std::vector<float> output(const std::string& name) const;
  // Enqueues every op and waits; with profile, per-op device times.
  RunTiming run(bool profile = false);

  const Graph& graph() const { return graph_; }
  const std::vector<NodeChoice>& choices() const { return choices_; }
  // By node: a steady op (ExecOptions::reuseSteadyOps), run only when a steady input changes.
  const std::vector<bool>& steadyOps() const { return steadyOp_; }
  const ExecMemory& memory() const { return memory_; }
  // The arena's records (activations, streamed weights, scratch) and the plan placing
  // them; empty / null with planner "none". For tests that check no two live tensors overlap.
  const std::vector<TensorUsage>& planRecords() const { return planRecords_; }
  const MemoryPlan* plan() const { return plan_ ? &*plan_ : nullptr; }

 private:
  struct Layout;  // the planner's records and who owns each
  Layout layout() const;
  uint64_t footprint() const;  // device bytes of the current choices (plans the arena)
  void fitBudget(const TunedChooser& chooser);
  void checkDeviceFits() const;  // the estimate against the device's free memory, before allocate()
  void lessScratch(const TunedChooser& chooser, bool convolutions = false);
  void allocate(const WeightSource& weights);
  void assignWeightFormats();  // weightFormat_, and memory_.weightGroups under int8/int4
  // Uploads (or prepares to stream) a quantized weight from blocks stored in the file;
  // false when the file holds it otherwise (then it is quantized at load).
  bool uploadQuantizedFromFile(const WeightSource& weights, size_t id, const TensorDesc& desc);
  // Uploads (or prepares to stream) an f32/f16 weight whose file holds it in that dtype and
  // shape, from the mapped bytes: no widening to f32 and back (a run's setup was mostly
  // that: 8.3 of 10.3 s for SD 1.5's f16 UNet on an H100, results/vulkan/tiles/). False
  // otherwise (then it is read through load()).
  bool uploadFloatFromFile(const WeightSource& weights, size_t id, const TensorDesc& desc);
  // A weight's bytes from the mapped file: streamed from there, or uploaded now.
  void placeFileWeight(size_t id, const TensorDesc& desc, std::span<const uint8_t> bytes);
  void makePlaceholders(bool create);
  void bindArguments();
  void checkOutputFinite(size_t node) const;  // ExecOptions::checkFinite, after the node has finished
  void findSteadyOps();  // steadyOp_, persistent_, steadyOnlyWeight_

  Backend& be_;
  const Graph& graph_;
  ExecOptions opt_;
  std::vector<NodeChoice> choices_;
  std::vector<std::unique_ptr<PreparedOp>> ops_;
  std::vector<std::unique_ptr<DeviceTensor>> tensors_;  // by graph tensor id (null for unused)
  std::map<std::pair<std::string, std::string>, std::unique_ptr<DeviceTensor>> placeholders_;  // (shape, format) -> zeros for unused slots
  std::vector<std::vector<DeviceTensor*>> args_;             // per node, in slot order
  std::unique_ptr<DeviceArena> arena_;
  ExecMemory memory_;
  std::vector<TensorUsage> planRecords_;
  std::optional<MemoryPlan> plan_;
  std::vector<bool> streamed_;                  // by graph tensor id: a streamed weight
  std::vector<StorageFormat> weightFormat_;     // by graph tensor id: a weight's format (the slot reading it)
  std::vector<StorageFormat> nodeFormat_;       // by node: opt_.format with the node's layer kind's weight format
  // Streamed weights' bytes by tensor id: a packed copy (hostCopies_), or the checkpoint's
  // mapped pages when they already hold the packed bytes.
  std::vector<std::vector<uint8_t>> hostCopies_;
  std::vector<std::span<const uint8_t>> hostWeights_;
  uint64_t ringSlotBytes() const;  // 0 when nothing streams through a ring
  std::unique_ptr<WeightStream> stream_;  // made by allocate() (weight_stream.h)
  std::vector<std::vector<int>> uploadsAt_;    // per node: streamed weights whose upload starts with it
  std::vector<std::vector<int>> readyBy_;      // per node: streamed weights it must wait for
  bool warmingUp_ = false;                     // run() is warmUp's (error lines say so)
  // Steady ops (ExecOptions::reuseSteadyOps): by node, whether it is one; by tensor id,
  // whether the plan keeps it alive for the whole run (a steady op's output that others
  // read, a steady input they read), and whether only steady ops read it (a streamed
  // weight of theirs is not uploaded while their outputs are reused).
  std::vector<bool> steadyOp_, persistent_, steadyOnlyWeight_;
  bool steadyValid_ = false;  // the steady ops' outputs match the steady inputs' current values
  std::map<std::string, std::vector<float>> steadyValues_;  // the values they were computed from
  std::set<std::string> steadySkipped_;  // steady inputs set to the same values since the last run (no upload)
};

}  // namespace sdspeed
