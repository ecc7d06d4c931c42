// The op graph of one model component (text encoder, UNet, VAE decoder): tensors and
// ops in execution order, each op an instance of a kernel family (its Problem is the
// tuner's op-instance key). The graph is the source of truth for shapes: `sdspeed
// shapes` lists its instances, the executor runs it, the memory planner reads the
// tensors' lifetimes from it.
//
// Conventions: every activation is logical NCHW; a token tensor [B, S, C] is
// Bx Cx1xS, so a feature map becomes tokens by a view (no copy) in every layout the
// runner uses (NCHW and NC4HW4 buffers store H*W contiguously per channel).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/family.h"

namespace sdspeed {

struct GraphTensor {
  enum class Kind {
    Activation,  // produced by an op (or a graph input), in the run's storage format
    Weight,      // loaded from the checkpoint by name, f32 NCHW buffer
    HostInput,   // a small f32 NCHW parameter the host fills per run (token ids, timesteps)
  };
  Kind kind = Kind::Activation;
  Shape shape;
  std::string name;                 // weight name, input name, or the producing op's label
  std::vector<int64_t> diskShape;   // Weight: its shape in the checkpoint
  int viewOf = -1;                  // Activation: a reshape of that tensor (shares its memory)
};

struct GraphNode {
  const Family* family = nullptr;
  ProblemPtr problem;
  std::vector<int> args;  // a tensor id per family slot; -1 = unused (a placeholder)
  std::string label;      // e.g. "down_blocks.0.resnets.1.conv2"
  int output() const;     // the written slot's tensor
};

class Graph {
 public:
  explicit Graph(std::string component) : component_(std::move(component)) {}
  const std::string& component() const { return component_; }
  const std::vector<GraphTensor>& tensors() const { return tensors_; }
  const std::vector<GraphNode>& nodes() const { return nodes_; }
  const GraphTensor& tensor(int id) const { return tensors_.at(static_cast<size_t>(id)); }

  int addInput(const std::string& name, Shape shape, bool activation);
  int addWeight(const std::string& name, Shape shape, std::vector<int64_t> diskShape);
  // A view of `base` (an activation) with another shape of the same element count.
  int view(int base, Shape shape);
  // Appends an op: `family` with its problem; `bound` maps slot names to tensor ids
  // (unbound read slots are unused placeholders). Checks every bound tensor's shape
  // against the family's slot shape and returns the new output tensor.
  int add(const std::string& family, const ProblemPtr& problem, const std::map<std::string, int>& bound,
          const std::string& label);
  void markOutput(const std::string& name, int tensor);
  // An input that keeps its values from call to call in normal use: the UNet's text
  // context, the same at every denoising step of an image. The executor runs the ops
  // that depend on nothing else (besides weights: the cross-attentions' K and V
  // projections) once, and reuses their outputs while the input's values stay the same
  // (ExecOptions::reuseSteadyOps).
  void markSteady(const std::string& input);
  const std::set<std::string>& steadyInputs() const { return steady_; }
  // Per node: whether it is steady, i.e. every tensor it reads is a weight, a steady
  // input or a steady node's output, at least one of them not a weight. Such a node
  // computes the same values at every call while the steady inputs keep theirs: the
  // executor runs it once per image, `tune --model` weighs it once per image.
  std::vector<bool> steadyNodes() const;
  const std::map<std::string, int>& inputs() const { return inputs_; }
  const std::map<std::string, int>& outputs() const { return outputs_; }
  // The tensor whose memory `id` uses (follows views).
  int storageOf(int id) const;

 private:
  std::string component_;
  std::vector<GraphTensor> tensors_;
  std::vector<GraphNode> nodes_;
  std::map<std::string, int> inputs_, outputs_;
  std::set<std::string> steady_;
};

// Builds nodes with diffusers' parameter names under a prefix: the small vocabulary
// the three model builders share.
// How the model builders lay out ops.
struct GraphOptions {
  // false: GroupNorm + SiLU and GEMM + activation as two kernels each (what a
  // framework without specialized kernels runs; the ablation's baseline).
  bool fuseActivations = true;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(Graph& g, GraphOptions options = {}) : g_(g), opt_(options) {}
  Graph& graph() { return g_; }
  const Shape& shape(int t) const { return g_.tensor(t).shape; }

  // Conv2d `prefix` (weight [cout, cin, k, k], bias [cout]); temb [B, cout, 1, 1]
  // added per channel; residual (the output's shape) added last.
  int conv(int x, const std::string& prefix, int64_t cout, int k, int stride, int pad, int temb = -1,
           int residual = -1);
  // GroupNorm `prefix` (weight, bias [C]) with an optional fused SiLU.
  int groupNorm(int x, const std::string& prefix, int64_t groups, double eps, bool silu);
  int layerNorm(int x, const std::string& prefix, double eps);
  // Linear `prefix` (weight [rows, K], optional bias) over every position of x,
  // with an epilogue and an optional residual. diskShape overrides the checkpoint
  // shape of the weight (a 1x1 conv's [rows, K, 1, 1]).
  int linear(int x, const std::string& prefix, int64_t rows, bool bias, const std::string& epilogue = "none",
             int residual = -1, std::vector<int64_t> diskShape = {});
  int attention(int q, int k, int v, int64_t heads, bool causal, const std::string& label);
  int activation(int x, const std::string& fn, const std::string& label);
  int upsample2x(int x, const std::string& label);
  int concat(int a, int b, const std::string& label);
  // Feature map [B, C, H, W] <-> tokens [B, C, 1, H*W].
  int toTokens(int x);
  int toMap(int tokens, int64_t h, int64_t w);

 private:
  int weight(const std::string& name, Shape shape, std::vector<int64_t> diskShape);
  Graph& g_;
  GraphOptions opt_;
};

std::string fmtAttr(double v);  // a double attribute as the families print it

}  // namespace sdspeed
