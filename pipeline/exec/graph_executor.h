// Runs a component graph on one device: every op through its kernel family, with the
// variant and parameters the device's tuning database names for its op instance
// (or a --variant override, using that variant's own tuned parameters), falling back
// to another variant when the chosen one cannot run the instance. Activations live
// in memory the planner assigned (one arena, sub-buffers per tensor), weights in
// their own buffers.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/model/graph.h"
#include "pipeline/weights.h"
#include "runtime/memory_planner.h"
#include "runtime/tensor.h"
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
  std::string dbDir = "configs/tuned";             // the tuning databases
  // family -> the variants allowed (a --variant override is a list of one): among
  // them the database's fastest for each instance when it times all of them exactly,
  // else the last allowed one that can run it.
  std::map<std::string, std::vector<std::string>> variants;
  // false: GroupNorm+SiLU and GEMM+activation run as separate kernels (the
  // ablation's baseline); graph building reads it.
  bool fuseActivations = true;
  std::string planner = "greedy-by-size";          // a PlanStrategy name, or "none" (one buffer per tensor)
};

// The weight format `component` runs with: its override, else opt.format.weights.
inline DType componentWeightFormat(const ExecOptions& opt, const std::string& component) {
  auto it = opt.componentWeights.find(component);
  return it == opt.componentWeights.end() ? opt.format.weights : it->second;
}
// The pipeline's components, for --weights COMPONENT=FORMAT.
inline const std::vector<std::string>& pipelineComponents() {
  static const std::vector<std::string> c{"text_encoder", "unet", "vae_decoder"};
  return c;
}
// Parses "f32|f16[,COMPONENT=f32|f16...]" (--weights, the ablation's `weights` key) into
// opt.format.weights and opt.componentWeights; throws Error naming `what` for an
// unknown format or component.
void parseWeightsSpec(const std::string& text, const std::string& what, ExecOptions& opt);
// The spec back as text, components in pipeline order, only those that differ.
std::string weightsSpecText(const ExecOptions& opt);

// The tensor's values fit f16 (|x| <= 65504, the largest finite half): else one Error
// naming the component, the tensor and the value, suggesting --weights COMPONENT=f32.
// f16 rounding would make such a value inf, silently.
void checkFitsF16(const std::vector<float>& values, const std::string& component, const std::string& tensor);

// What one node runs with, and why.
struct NodeChoice {
  std::string instance;  // OpInstance text
  std::string variant, params, source;
};

struct NodeTime {
  int node = 0;
  double us = 0;  // first kernel start to last kernel end
};

struct RunTiming {
  double deviceMs = 0;  // first kernel start of the first op to last kernel end of the last
  double wallMs = 0;    // host: first enqueue to finish
  std::vector<NodeTime> nodes;  // filled when profiling
};

struct ExecMemory {
  uint64_t weightBytes = 0;
  uint64_t scratchBytes = 0;     // kernel scratch (im2col, attention scores, Winograd planes)
  uint64_t activationBytes = 0;  // the chosen plan's device memory for activations
  std::map<std::string, uint64_t> planBytes;  // every strategy's plan (name -> bytes), "lower-bound" too
};

// The activations of a graph as the planner sees them: one record per tensor that
// owns memory (views extend their base's lifetime; inputs live from op 0, outputs to
// the last op), sized in `format`.
struct ActivationUsage {
  std::vector<TensorUsage> records;
  std::vector<int> tensors;  // the graph tensor of each record
};
ActivationUsage activationUsage(const Graph& graph, const StorageFormat& format);
// Every strategy's plan size (by planStrategyName) and "lower-bound".
std::map<std::string, uint64_t> planSizes(const ActivationUsage& usage, uint64_t alignment);

class GraphExecutor {
 public:
  // Prepares every op (programs come from the cache) and uploads the weights.
  GraphExecutor(Context& ctx, const Graph& graph, const WeightSource& weights, const ExecOptions& options);
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
  const ExecMemory& memory() const { return memory_; }

 private:
  void allocate(const WeightSource& weights);
  void bindArguments();

  Context& ctx_;
  const Graph& graph_;
  ExecOptions opt_;
  std::vector<NodeChoice> choices_;
  std::vector<std::unique_ptr<PreparedOp>> ops_;
  std::vector<std::unique_ptr<DeviceTensor>> tensors_;  // by graph tensor id (null for unused)
  std::vector<std::unique_ptr<DeviceTensor>> placeholders_;  // zero tensors for unused slots
  std::vector<std::vector<DeviceTensor*>> args_;             // per node, in slot order
  ClMem arena_;
  ExecMemory memory_;
};

}  // namespace sdspeed
