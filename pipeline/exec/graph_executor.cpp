#include "pipeline/exec/graph_executor.h"
#include "pipeline/exec/graph_executor_internal.h"

#include "kernels/common/half_variant.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>

#include "kernels/lowering.h"
#include "kernels/registry.h"
#include "pipeline/exec/weight_kinds.h"
#include "pipeline/finite.h"
#include "pipeline/safetensors.h"
#include "runtime/timing.h"

namespace sdspeed {

using namespace executor_detail;

std::string whyNotRunnable(const Family& fam, const TunedChoice& c, const Problem& prob, const StorageFormat& f,
                           Backend& be) {
  const VariantDef* v = nullptr;
  ParamPoint p;
  try {
    v = &fam.variant(c.variant);
    p = v->parsePoint(c.params);
    if (std::string why = fam.unsupportedReason(*v, p, prob, f, be.caps()); !why.empty()) return why;
  } catch (const Error& e) {
    // A database row naming a variant or parameter this build no longer has.
    return std::string("stale tuned point: ") + e.what();
  }
  // A variant the rules allow but this backend has no kernels for (Vulkan's gaps); any
  // other failure there (a driver error) is not a stale point: it propagates.
  return loweringGap(be, fam, *v, p, prob, f);
}

namespace {

// Host inputs (token ids, timesteps) are f32 NCHW whatever the weight format.
const StorageFormat kHostInputFormat{DType::F32, Storage::Buffer, Layout::NCHW};

// The database's choice for an instance; for f16 (or other non-f32) weights without an
// entry of their own (the database never crosses weight formats), the f32-weight
// instance's choice, marked as such: the same kernels read the weights through the same
// accessors, so its ranking is the best guess there is, and far better than the generic
// default (conv's first variant is the direct kernel). `sdspeed tune --weights f16`
// replaces the guess with measured entries.
TunedChoice chooseForWeights(const TunedChooser& chooser, const Family& fam, const OpInstance& inst,
                             const std::string& variant = "") {
  TunedChoice c = chooser.choose(fam, inst, variant);
  if (c.tuned() || inst.format.weights == DType::F32) return c;
  OpInstance f32 = inst;
  f32.format = inst.format.withWeights(DType::F32);
  TunedChoice g = chooser.choose(fam, f32, variant);
  if (!g.tuned()) return c;
  g.source = "f32-weight entry (" + g.source + "; no " + dtypeName(inst.format.weights) + "-weight entry)";
  g.medianUs = 0;  // timed with other weights: not this instance's time
  return g;
}


}  // namespace

namespace executor_detail {

// The variant's point this node can run: its tuned point (exact, nearest, device or
// vendor default), else its declared defaults; empty when neither can run it (the
// first refusal goes into `refused`). Declared in graph_executor_internal.h.
std::optional<TunedChoice> runnablePoint(const TunedChooser& chooser, const Family& fam, const OpInstance& inst,
                                         const std::string& variant, const ChoiceRefusal& whyNot,
                                         std::string& refused) {
  for (TunedChoice c :
       {chooseForWeights(chooser, fam, inst, variant), TunedChoice{variant, genericDefault(fam, fam.variant(variant), inst).text(), "defaults"}}) {
    const std::string why = whyNot(c);
    if (why.empty()) return c;
    if (refused.empty()) refused = c.variant + " " + c.params + ": " + why;
  }
  return std::nullopt;
}

}  // namespace executor_detail

std::optional<NodeChoice> chooseVariant(const TunedChooser& chooser, const Family& fam, const OpInstance& inst,
                                        const std::vector<std::string>* allowed, const ChoiceRefusal& whyNot,
                                        std::string& refused) {
  if (!allowed) {
    TunedChoice c = chooseForWeights(chooser, fam, inst);
    if (c.tuned()) {
      const std::string why = whyNot(c);
      if (why.empty()) return NodeChoice{inst.text(), c.variant, c.params, c.source};
      refused = c.variant + " " + c.params + ": " + why;
      // Half arithmetic and a choice that computes in f32 only (a database of f32 entries):
      // its half twin at the same point (twins share their base's parameters), before the
      // default-order fallback, which would take the first twin (im2col_gemm_f16 for a
      // tuned conv1x1) at its defaults.
      const std::string twin = c.variant + kHalfSuffix;
      const auto& vs = fam.variants();
      if (inst.format.arithmetic == DType::F16 &&
          std::any_of(vs.begin(), vs.end(), [&](const VariantDef& v) { return v.name == twin; })) {
        TunedChoice t = c;
        t.variant = twin;
        t.source = c.source + "; its half twin";
        t.medianUs = 0;  // timed in f32
        if (whyNot(t).empty()) return NodeChoice{inst.text(), t.variant, t.params, t.source};
      }
    } else {
      // No database answers: the family's default order (VariantDef::defaultRank), the
      // first variant that can run the instance here. Not a fallback: nothing was chosen
      // and refused. Higher-ranked variants of this arithmetic that were refused are named
      // (coopmat_f16 on a device without cooperative matrices); the other arithmetic's
      // are not (every f32 variant "computes in f32 only" under --arithmetic f16).
      std::string passed;
      for (const VariantDef* v : defaultOrder(fam)) {
        std::string why;
        if (auto a = runnablePoint(chooser, fam, inst, v->name, whyNot, why))
          return NodeChoice{inst.text(), a->variant, a->params, a->source + passed};
        if (refused.empty()) refused = why;
        const auto& ar = v->arithmetic;
        if (std::find(ar.begin(), ar.end(), inst.format.arithmetic) != ar.end()) passed += "; not " + why;
      }
      return std::nullopt;
    }
  } else {
    std::vector<TunedChoice> candidates;  // one per allowed variant that can run the instance
    for (const auto& v : *allowed)
      if (auto c = runnablePoint(chooser, fam, inst, v, whyNot, refused)) candidates.push_back(*c);
    if (!candidates.empty()) {
      // All timed: the fastest. Otherwise the last allowed one (lists put the newest
      // variant last, so an ablation row runs what it adds unless it is slower).
      // Only exact entries of this device time this instance; a nearest shape's or another
      // device's time says little about it.
      const bool allTimed = std::all_of(candidates.begin(), candidates.end(), [](const TunedChoice& c) {
        return c.medianUs > 0 && c.step == TunedStep::Exact;
      });
      const TunedChoice& c = allTimed ? *std::min_element(candidates.begin(), candidates.end(),
                                                          [](const auto& a, const auto& b) { return a.medianUs < b.medianUs; })
                                      : candidates.back();
      return NodeChoice{inst.text(), c.variant, c.params, c.source};
    }
  }
  std::string ignored;
  for (const VariantDef* v : defaultOrder(fam))
    if (auto a = runnablePoint(chooser, fam, inst, v->name, whyNot, ignored))
      return NodeChoice{inst.text(), a->variant, a->params, a->source + "; fallback, " + refused};
  return std::nullopt;
}

namespace {

// The node's choice on this backend (chooseVariant with the backend's refusals), or one
// Error naming the node, the instance, the device and the first refusal.
// `format`: the node's (its layer kind's weight format).
NodeChoice choose(const TunedChooser& chooser, const GraphNode& n, const StorageFormat& format, const ExecOptions& opt,
                  Backend& dev) {
  const Family& fam = *n.family;
  const OpInstance inst = OpInstance::of(fam, *n.problem, format);
  auto allowed = opt.variants.find(fam.name());
  std::string refused;
  const auto why = [&](const TunedChoice& c) { return whyNotRunnable(fam, c, *n.problem, format, dev); };
  if (auto c = chooseVariant(chooser, fam, inst, allowed == opt.variants.end() ? nullptr : &allowed->second, why, refused))
    return *c;
  throw Error(n.label + ": no variant of " + fam.name() + " can run " + inst.text() + " on " + dev.caps().name + " (" +
              refused + ")" +
              (format.arithmetic == DType::F16 && !dev.caps().fp16
                   ? "; --arithmetic f16 needs a device that computes in half (" + dev.caps().name + " does not)"
                   : ""));
}

}  // namespace

void parseWeightsSpec(const std::string& text, const std::string& what, ExecOptions& opt) {
  const std::string want = " (want FORMAT[,KEY=FORMAT..]: FORMAT f32|f16|int8|int4, KEY a component, a layer kind or "
                           "COMPONENT.KIND; kernels/QUANTIZATION.md)";
  const auto& comps = pipelineComponents();
  const auto& kinds = weightKinds();
  auto known = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  std::map<std::string, DType> overrides, kindOverrides;
  std::optional<DType> all;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      if (all) throw Error(what + ": more than one default weight format in '" + text + "' ('" + item + "')" + want);
      all = parseDType(item, what);
    } else {
      const std::string key = item.substr(0, eq);
      const DType f = parseDType(item.substr(eq + 1), what);
      const size_t dot = key.find('.');
      const bool component = known(comps, key);  // COMPONENT=FORMAT; else KIND or COMPONENT.KIND
      if (!component && dot == std::string::npos && !known(kinds, key))
        throw Error(what + ": unknown component or layer kind '" + key + "' in '" + text +
                    "' (components: text_encoder, unet, vae_decoder; kinds: conv, attn, ff, proj, time_embed)");
      if (!component && dot != std::string::npos) {
        const std::string comp = key.substr(0, dot), kind = key.substr(dot + 1);
        if (!known(comps, comp))
          throw Error(what + ": unknown component '" + comp + "' in '" + key + "' (want text_encoder, unet or vae_decoder)");
        if (!known(kinds, kind))
          throw Error(what + ": unknown layer kind '" + kind + "' in '" + key + "' (want conv, attn, ff, proj or time_embed)");
      }
      std::map<std::string, DType>& into = component ? overrides : kindOverrides;
      if (!into.emplace(key, f).second) throw Error(what + ": '" + key + "' given twice in '" + text + "'");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  opt.format.weights = all.value_or(DType::F32);
  opt.componentWeights = overrides;
  opt.kindWeights = kindOverrides;
}

std::string weightsSpecText(const ExecOptions& opt) {
  std::string s = dtypeName(opt.format.weights);
  for (const auto& c : pipelineComponents())
    if (componentWeightFormat(opt, c) != opt.format.weights) s += "," + c + "=" + dtypeName(componentWeightFormat(opt, c));
  // Kinds before component.kind (the order of precedence, least specific first).
  for (const bool scoped : {false, true})
    for (const auto& [key, f] : opt.kindWeights)
      if ((key.find('.') != std::string::npos) == scoped) s += "," + key + "=" + dtypeName(f);
  return s;
}

std::vector<StorageFormat> graphNodeFormats(const Graph& graph, const StorageFormat& format, const ExecOptions& opt) {
  std::vector<StorageFormat> out;
  for (const GraphNode& n : graph.nodes()) {
    const std::string kind = nodeWeightKind(n);
    // No override for this node: the format given (the component's, as the caller set it).
    const bool overridden = !kind.empty() && (opt.kindWeights.count(graph.component() + "." + kind) ||
                                              opt.kindWeights.count(kind));
    StorageFormat f = overridden ? format.withWeights(weightFormatFor(opt, graph.component(), kind)) : format;
    // --arithmetic f16 runs each op in half where its family has a half variant; the
    // others (the copies, timestep, embedding) compute in f32 on the same f16 storage, as
    // the report's variants show (kernels/README.md lists what accumulates where).
    if (f.arithmetic != DType::F32 && !familyComputesIn(*n.family, f.arithmetic)) f = f.withArithmetic(DType::F32);
    out.push_back(f);
  }
  return out;
}

void checkFitsF16(const std::vector<float>& values, const std::string& component, const std::string& tensor) {
  for (size_t i = 0; i < values.size(); ++i)
    if (std::abs(values[i]) > 65504.0f && std::isfinite(values[i])) {
      std::ostringstream m;
      m << component << " weight " << tensor << " holds " << values[i] << " (element " << i
        << "), outside f16's finite range (|x| <= 65504): f16 weights would make it inf; use --weights f32 for it"
        << " (e.g. --weights f16," << component << "=f32)";
      throw Error(m.str());
    }
}

void checkFiniteWeight(const std::vector<float>& values, const std::string& component, const std::string& tensor) {
  const size_t i = firstNonFinite(values);
  if (i == values.size()) return;
  throw Error(component + " weight " + tensor + " holds " + nonFiniteAt(values, i) +
              ": the checkpoint has a non-finite value (every output would be NaN)");
}

ActivationUsage activationUsage(const Graph& graph, const StorageFormat& format, const std::vector<bool>* persistent) {
  const auto& ts = graph.tensors();
  const auto& nodes = graph.nodes();
  const int lastNode = static_cast<int>(nodes.size()) - 1;
  std::vector<int> first(ts.size(), -1), last(ts.size(), -1);
  for (const auto& [name, id] : graph.inputs()) first[static_cast<size_t>(id)] = 0;
  for (int i = 0; i <= lastNode; ++i)
    for (int a : nodes[static_cast<size_t>(i)].args) {
      if (a < 0) continue;
      const size_t s = static_cast<size_t>(graph.storageOf(a));
      if (first[s] < 0) first[s] = i;  // written here (the op's output)
      last[s] = std::max(last[s], i);
    }
  for (const auto& [name, id] : graph.outputs()) last[static_cast<size_t>(graph.storageOf(id))] = lastNode;
  if (persistent)
    for (size_t id = 0; id < ts.size() && id < persistent->size(); ++id)
      if ((*persistent)[id] && first[id] >= 0) {
        first[id] = 0;
        last[id] = lastNode;
      }
  ActivationUsage u;
  for (size_t id = 0; id < ts.size(); ++id) {
    const GraphTensor& t = ts[id];
    if (t.kind != GraphTensor::Kind::Activation || t.viewOf >= 0 || first[id] < 0) continue;
    u.records.push_back({TensorDesc{t.shape, format}.bytes(), first[id], std::max(first[id], last[id])});
    u.tensors.push_back(static_cast<int>(id));
  }
  return u;
}

std::map<std::string, uint64_t> planSizes(const ActivationUsage& usage, uint64_t alignment) {
  std::map<std::string, uint64_t> out;
  for (PlanStrategy s : allPlanStrategies()) out[planStrategyName(s)] = planMemory(usage.records, s, alignment).totalBytes();
  out["lower-bound"] = lowerBoundBytes(usage.records);
  return out;
}

namespace executor_detail {

std::string gib(uint64_t bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f GB (%.1f MiB)", static_cast<double>(bytes) * 1e-9, static_cast<double>(bytes) / (1 << 20));
  return b;
}

}  // namespace executor_detail

GraphExecutor::Layout GraphExecutor::layout() const {
  Layout l;
  const ActivationUsage act = activationUsage(graph_, opt_.format, &persistent_);
  l.records = act.records;
  for (int id : act.tensors) l.owners.push_back({Layout::Owner::Kind::Tensor, id, 0});
  const auto& nodes = graph_.nodes();
  std::vector<int> first(graph_.tensors().size(), -1), last(graph_.tensors().size(), -1);
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i)
    for (int a : nodes[static_cast<size_t>(i)].args)
      if (a >= 0 && streamed_[static_cast<size_t>(a)]) {
        if (first[static_cast<size_t>(a)] < 0) first[static_cast<size_t>(a)] = i;
        last[static_cast<size_t>(a)] = i;
      }
  for (size_t id = 0; id < streamed_.size(); ++id)
    if (streamed_[id] && first[id] >= 0) {
      l.records.push_back({TensorDesc{graph_.tensors()[id].shape, weightFormat_[id]}.bytes(), std::max(0, first[id] - 1), last[id]});
      l.owners.push_back({Layout::Owner::Kind::Tensor, static_cast<int>(id), 0});
    }
  if (opt_.planScratch && opt_.planner != "none")
    for (size_t i = 0; i < ops_.size(); ++i) {
      const auto regions = ops_[i]->scratchRegions();
      for (size_t r = 0; r < regions.size(); ++r) {
        l.records.push_back({regions[r], static_cast<int>(i), static_cast<int>(i)});
        l.owners.push_back({Layout::Owner::Kind::Scratch, static_cast<int>(i), static_cast<int>(r)});
      }
    }
  return l;
}

GraphExecutor::GraphExecutor(Backend& backend, const Graph& graph, const WeightSource& weights,
                             const ExecOptions& options)
    : be_(backend), graph_(graph), opt_(options) {
  if (opt_.format.storage != Storage::Buffer)
    throw Error("the pipeline runs on buffer storage (views reshape tensors in place); got " + opt_.format.name());
  for (const auto& [fam, list] : opt_.variants)
    for (const auto& v : list) findFamily(fam).variant(v);  // unknown names: an Error here
  const auto& ts = graph_.tensors();
  // A checkpoint without a tensor fails before any program is built (load names it).
  for (const GraphTensor& t : ts)
    if (t.kind == GraphTensor::Kind::Weight && !weights.has(t.name)) weights.load(t.name, t.diskShape);
  streamed_.assign(ts.size(), false);
  findSteadyOps();
  nodeFormat_ = graphNodeFormats(graph_, opt_.format, opt_);
  assignWeightFormats();
  const TunedChooser chooser(opt_.dbDir, be_.deviceKey(), be_.caps());
  for (size_t i = 0; i < graph_.nodes().size(); ++i) {
    const GraphNode& n = graph_.nodes()[i];
    NodeChoice c = choose(chooser, n, nodeFormat_[i], opt_, be_);
    const VariantDef& v = n.family->variant(c.variant);
    ops_.push_back(prepareOp(be_, *n.family, v, v.parsePoint(c.params), *n.problem, nodeFormat_[i]));
    if (opt_.derivedWeightsPerCall && ops_.back()->derivedWeightBytes() > 0) ops_.back()->setDerivedWeightsPerCall(true);
    choices_.push_back(std::move(c));
  }
  for (const GraphTensor& t : ts)
    if (t.kind == GraphTensor::Kind::HostInput) memory_.otherBytes += TensorDesc{t.shape, kHostInputFormat}.bytes();
  makePlaceholders(false);
  fitBudget(chooser);
  checkDeviceFits();
  makePlaceholders(true);
  allocate(weights);
  bindArguments();
  for (size_t i = 0; i < ops_.size(); ++i) {
    NodeChoice& c = choices_[i];
    c.scratchBytes = ops_[i]->scratchBytes();
    c.derivedPerCall = ops_[i]->derivedWeightsPerCall();
    c.derivedWeightBytes = c.derivedPerCall ? 0 : ops_[i]->derivedWeightBytes();
    memory_.scratchBytes += c.scratchBytes;
    memory_.scratchPeakBytes = std::max<uint64_t>(memory_.scratchPeakBytes, c.scratchBytes);
    memory_.derivedWeightBytes += c.derivedWeightBytes;
  }
}

// Steady ops (Graph::steadyNodes): every tensor they read is a weight, a steady input or a
// steady op's output, at least one of them not a weight. In the UNet:
// the 16 cross-attentions' K and V projections of the text context (32 GEMMs, 0.72 ms of
// a 26.9 ms step on an H100: results/vulkan/flash3/call11-h100/profile-vulkan-f16-race.txt).
// A steady tensor that a non-steady op reads (or a graph output) is persistent: alive for
// the whole run in the plan, so no other tensor overwrites it between runs. Steady
// tensors only steady ops read need not be: while outputs are reused nothing reads them,
// and new input values run the steady ops again from the input up.
void GraphExecutor::findSteadyOps() {
  const auto& ts = graph_.tensors();
  const auto& nodes = graph_.nodes();
  steadyOp_.assign(nodes.size(), false);
  persistent_.assign(ts.size(), false);
  steadyOnlyWeight_.assign(ts.size(), false);
  if (!opt_.reuseSteadyOps || graph_.steadyInputs().empty()) return;
  steadyOp_ = graph_.steadyNodes();
  std::vector<bool> steady(ts.size(), false);  // by storage tensor: steady inputs and steady ops' outputs
  for (const auto& name : graph_.steadyInputs())
    steady[static_cast<size_t>(graph_.storageOf(graph_.inputs().at(name)))] = true;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (steadyOp_[i]) steady[static_cast<size_t>(graph_.storageOf(nodes[i].output()))] = true;
  auto reads = [&](const GraphNode& n, auto&& visit) {  // visit(storage id) for each read slot's tensor
    const auto slots = n.family->slots();
    for (size_t k = 0; k < slots.size(); ++k)
      if (n.args[k] >= 0 && slots[k].access != Access::Write) visit(static_cast<size_t>(graph_.storageOf(n.args[k])));
  };
  std::vector<bool> readByOther(ts.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!steadyOp_[i])
      reads(nodes[i], [&](size_t s) {
        readByOther[s] = true;
        if (steady[s] && ts[s].kind == GraphTensor::Kind::Activation) persistent_[s] = true;
      });
  for (const auto& [name, id] : graph_.outputs())
    if (const size_t s = static_cast<size_t>(graph_.storageOf(id)); steady[s]) persistent_[s] = true;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (steadyOp_[i])
      reads(nodes[i], [&](size_t s) {
        if (ts[s].kind == GraphTensor::Kind::Weight && !readByOther[s]) steadyOnlyWeight_[s] = true;
      });
}

GraphExecutor::~GraphExecutor() {
  // Kernels (which hold the buffers as arguments) first, then the tensors (sub-buffers
  // and views), the arena last, after the queue has drained: the order drivers expect,
  // whatever the members' declaration order.
  try {
    be_.finish();
  } catch (const std::exception&) {
  }
  stream_.reset();
  ops_.clear();
  args_.clear();
  placeholders_.clear();
  tensors_.clear();
  arena_.reset();
}

void GraphExecutor::allocate(const WeightSource& weights) {
  const auto& ts = graph_.tensors();
  tensors_.resize(ts.size());
  hostCopies_.assign(ts.size(), {});
  hostWeights_.assign(ts.size(), {});
  for (size_t id = 0; id < ts.size(); ++id) {
    const GraphTensor& t = ts[id];
    const TensorDesc desc{t.shape, t.kind == GraphTensor::Kind::HostInput ? kHostInputFormat : weightFormat_[id]};
    if (t.kind == GraphTensor::Kind::Weight) {
      if (isQuantized(desc.format.dtype) && uploadQuantizedFromFile(weights, id, desc)) continue;
      if (!isQuantized(desc.format.dtype) && uploadFloatFromFile(weights, id, desc)) continue;
      const std::vector<float> values = weights.load(t.name, t.diskShape);
      checkFiniteWeight(values, graph_.component(), t.name);
      // f16 tensors (also a quantized run's unquantized ones); int8/int4 blocks hold an
      // f16 scale of max|x|/127 or /8, finite for any weight that fits f16.
      if (desc.format.dtype != DType::F32) checkFitsF16(values, graph_.component(), t.name);
      if (streamed_[id]) {  // placed in the arena below, uploaded before every run (steady-only: once)
        (steadyOnlyWeight_[id] ? memory_.streamedOnceBytes : memory_.streamedBytes) += desc.bytes();
        // Weights are packed NCHW (StorageFormat::params()): the checkpoint's element order.
        // (Quantized blocks are made here from f32/f16 checkpoints: never mapped.)
        const auto mapped = isQuantized(desc.format.dtype)
                                ? std::span<const std::byte>{}
                                : weights.mappedBytes(t.name, desc.format.dtype == DType::F16 ? "F16" : "F32");
        if (mapped.size() == desc.bytes()) {
          hostWeights_[id] = {reinterpret_cast<const uint8_t*>(mapped.data()), mapped.size()};
          memory_.streamedMappedBytes += mapped.size();
        } else {
          hostCopies_[id] = packTensor(desc, values);
          hostWeights_[id] = hostCopies_[id];
          memory_.stagingHostBytes += hostCopies_[id].size();
        }
        continue;
      }
      auto d = be_.makeTensor(desc);
      d->upload(values);  // quantized at upload (packTensor) when the format is int8/int4
      memory_.weightBytes += desc.bytes();
      tensors_[id] = std::move(d);
    } else if (t.kind == GraphTensor::Kind::HostInput) {
      tensors_[id] = be_.makeTensor(desc);
    }
  }

  const uint64_t align = be_.subBufferAlignment();
  const Layout l = layout();
  {
    ActivationUsage usage;
    usage.records = l.records;
    memory_.planBytes = planSizes(usage, align);
  }
  auto formatOf = [&](int id) { return ts[static_cast<size_t>(id)].kind == GraphTensor::Kind::Weight ? weightFormat_[static_cast<size_t>(id)] : opt_.format; };
  if (opt_.planner == "none") {
    for (const auto& o : l.owners) {
      const GraphTensor& t = ts[static_cast<size_t>(o.id)];
      tensors_[static_cast<size_t>(o.id)] = be_.makeTensor(TensorDesc{t.shape, formatOf(o.id)});
      memory_.activationBytes += tensors_[static_cast<size_t>(o.id)]->desc().bytes();
    }
  } else {
    plan_ = planMemory(l.records, parsePlanStrategy(opt_.planner), align);
    planRecords_ = l.records;
    const MemoryPlan& plan = *plan_;
    const auto bases = plan.arenaOffsets();
    const uint64_t arenaBytes = bases.back();
    if (arenaBytes > be_.caps().maxAllocBytes)
      throw Error("the " + graph_.component() + " activation arena needs " + std::to_string(arenaBytes >> 20) +
                  " MiB, more than the device's largest allocation (" +
                  std::to_string(be_.caps().maxAllocBytes >> 20) + " MiB); try --planner none");
    arena_ = be_.makeArena(arenaBytes, opt_.arenaSubBuffers);
    memory_.activationBytes = arenaBytes;
    std::vector<std::vector<BufferRegion>> scratch(ops_.size());
    for (size_t k = 0; k < l.owners.size(); ++k) {
      const auto& o = l.owners[k];
      const uint64_t offset = bases[plan.placements[k].buffer] + plan.placements[k].offset;
      if (o.kind == Layout::Owner::Kind::Scratch) {
        scratch[static_cast<size_t>(o.id)].push_back({arena_->handle(), offset});
        continue;
      }
      const TensorDesc desc{ts[static_cast<size_t>(o.id)].shape, formatOf(o.id)};
      tensors_[static_cast<size_t>(o.id)] = arena_->tensorAt(offset, desc);
    }
    for (size_t i = 0; i < ops_.size(); ++i)
      if (!scratch[i].empty()) ops_[i]->bindScratch(scratch[i]);
    if (opt_.planScratch) {
      ActivationUsage act = activationUsage(graph_, opt_.format, &persistent_);
      const uint64_t without = planMemory(act.records, parsePlanStrategy(opt_.planner), align).arenaOffsets().back();
      memory_.plannedScratchBytes = arenaBytes > without ? arenaBytes - without : 0;
    }
  }
  // Views share their base's memory object and offset.
  for (size_t id = 0; id < ts.size(); ++id) {
    const GraphTensor& t = ts[id];
    if (t.viewOf < 0 || !tensors_[static_cast<size_t>(t.viewOf)]) continue;
    tensors_[id] = be_.makeView(*tensors_[static_cast<size_t>(t.viewOf)], TensorDesc{t.shape, opt_.format});
  }
  // Streaming schedule: a weight's upload starts with the op before its first reader
  // (its arena region is free from then on: the plan keeps it apart from everything
  // alive at that op), and its first reader waits for the upload.
  uploadsAt_.assign(ops_.size(), {});
  readyBy_.assign(ops_.size(), {});
  for (size_t k = 0; k < l.owners.size(); ++k) {
    const auto& o = l.owners[k];
    if (o.kind != Layout::Owner::Kind::Tensor || !streamed_[static_cast<size_t>(o.id)]) continue;
    const int startOp = l.records[k].firstOp;
    int firstReader = -1;
    for (int i = 0; i < static_cast<int>(ops_.size()) && firstReader < 0; ++i)
      for (int a : graph_.nodes()[static_cast<size_t>(i)].args)
        if (a == o.id) firstReader = i;
    uploadsAt_[static_cast<size_t>(startOp)].push_back(o.id);
    readyBy_[static_cast<size_t>(firstReader)].push_back(o.id);
    choices_[static_cast<size_t>(firstReader)].streamedBytes += hostWeights_[static_cast<size_t>(o.id)].size();
  }
  stream_.reset();
  stream_ = makeWeightStream(be_, ringSlotBytes(), ts.size());
  memory_.stagingRingBytes = stream_->stagingBytes();
}

// Slots of at most ExecOptions::stagingSlotBytes, 32 MiB (a 1280x1280 3x3 f16 weight is
// 28 MiB: one slot; the largest f32 ones take two), as large as the largest streamed weight below that; three, so one
// fills while one uploads and one is read by nothing yet.
uint64_t GraphExecutor::ringSlotBytes() const {
  uint64_t largest = 0;
  const auto& ts = graph_.tensors();
  for (size_t id = 0; id < ts.size(); ++id)
    if (streamed_[id]) largest = std::max(largest, TensorDesc{ts[id].shape, weightFormat_[id]}.bytes());
  return weightStreamSlotBytes(be_, opt_.pinnedStaging, largest, opt_.stagingSlotBytes);
}

std::vector<StorageFormat> graphWeightFormats(const Graph& graph, const StorageFormat& format,
                                              std::vector<std::string>* why) {
  return graphWeightFormats(graph, std::vector<StorageFormat>(graph.nodes().size(), format), why);
}

std::vector<StorageFormat> graphWeightFormats(const Graph& graph, const std::vector<StorageFormat>& nodeFormats,
                                              std::vector<std::string>* why) {
  const auto& ts = graph.tensors();
  // A weight no op reads: in the first node's format (all nodes' activations agree).
  std::vector<StorageFormat> out(ts.size(), nodeFormats.empty() ? StorageFormat{}.params() : nodeFormats[0].params());
  std::vector<bool> seen(ts.size(), false);
  if (why) why->assign(ts.size(), "read by no op");
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const GraphNode& n = graph.nodes()[i];
    const StorageFormat& format = nodeFormats.at(i);
    const auto slots = n.family->slots();
    for (size_t s = 0; s < slots.size(); ++s) {
      if (n.args[s] < 0 || !slots[s].weight()) continue;
      const auto id = static_cast<size_t>(n.args[s]);
      if (ts[id].kind != GraphTensor::Kind::Weight) continue;
      const StorageFormat f = slotFormat(slots[s], format);
      if (seen[id] && !(out[id] == f))
        throw Error(graph.component() + " weight " + ts[id].name + " is read in two weight formats (" + out[id].name() +
                    ", " + f.name() + ")");
      seen[id] = true;
      out[id] = f;
      if (why)
        (*why)[id] = !n.family->readsQuantizedWeights()
                         ? n.family->name() + ": no " + dtypeName(format.weights) + " kernel path"
                         : n.family->name() + " " + slots[s].name + ": not a matrix weight";
    }
  }
  return out;
}

// Unused slots share one zero tensor per (shape, format). Counted first (create false:
// the footprint includes them, and a residual placeholder can be as large as a feature
// map), made once the footprint has been checked against the device.
void GraphExecutor::makePlaceholders(bool create) {
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < graph_.nodes().size(); ++i) {
    const GraphNode& n = graph_.nodes()[i];
    const auto slots = n.family->slots();
    const auto shapes = n.family->shapes(*n.problem);
    for (size_t s = 0; s < slots.size(); ++s) {
      if (n.args[s] >= 0) continue;
      const StorageFormat f = slotFormat(slots[s], nodeFormat_[i]);  // what the kernel was built to read
      const std::pair<std::string, std::string> key{shapes[s].text(), f.name()};
      if (!seen.insert(key).second) continue;
      const TensorDesc desc{shapes[s], f};
      if (!create) {
        memory_.otherBytes += desc.bytes();
        continue;
      }
      auto& p = placeholders_[key];
      p = be_.makeTensor(desc);
      p->upload(std::vector<float>(static_cast<size_t>(shapes[s].elements()), 0.0f));
    }
  }
}

// Each node's tensors in slot order, resolved once (run() is the hot path).
void GraphExecutor::bindArguments() {
  for (size_t i = 0; i < graph_.nodes().size(); ++i) {
    const GraphNode& n = graph_.nodes()[i];
    const StorageFormat& format = nodeFormat_[i];
    const auto slots = n.family->slots();
    const auto shapes = n.family->shapes(*n.problem);
    std::vector<DeviceTensor*> args;
    for (size_t s = 0; s < slots.size(); ++s) {
      if (n.args[s] >= 0) {
        DeviceTensor* t = tensors_[static_cast<size_t>(n.args[s])].get();
        // A weight bound to a host-input slot (or the reverse) would be read in the wrong dtype.
        if (!slots[s].activation && !(t->desc().format == slotFormat(slots[s], format)))
          throw Error(n.label + ": slot " + slots[s].name + " holds " + t->desc().format.name() + ", the kernel reads " +
                      slotFormat(slots[s], format).name());
        args.push_back(t);
        continue;
      }
      args.push_back(placeholders_.at({shapes[s].text(), slotFormat(slots[s], format).name()}).get());
    }
    args_.push_back(std::move(args));
  }
}

void GraphExecutor::warmUp() {
  // Zero inputs: valid token ids and timesteps, finite activations.
  for (const auto& [name, id] : graph_.inputs())
    setInput(name, std::vector<float>(static_cast<size_t>(graph_.tensor(id).shape.elements()), 0.0f));
  warmingUp_ = true;
  try {
    run(false);
  } catch (...) {
    warmingUp_ = false;
    throw;
  }
  warmingUp_ = false;
}

void GraphExecutor::setInput(const std::string& name, const std::vector<float>& nchw) {
  auto it = graph_.inputs().find(name);
  if (it == graph_.inputs().end()) throw Error(graph_.component() + " has no input '" + name + "'");
  const Shape& s = graph_.tensor(it->second).shape;
  if (nchw.size() != static_cast<size_t>(s.elements()))
    throw Error(graph_.component() + " input '" + name + "' needs " + s.text() + " (" + std::to_string(s.elements()) +
                " values), given " + std::to_string(nchw.size()));
  // Host inputs are small (latents, timesteps, token ids, text embeddings): a scan here
  // keeps a NaN from entering the graph unnamed (--check-finite would blame the first op).
  if (const size_t i = firstNonFinite(nchw); i < nchw.size())
    throw RunFailure(graph_.component() + " input '" + name + "' holds " + nonFiniteAt(nchw, i));
  if (graph_.steadyInputs().count(name) && opt_.reuseSteadyOps) {
    // The same values again (the next denoising step's context): the steady ops' outputs
    // still hold, and so does the input where a non-steady op reads it (persistent).
    auto& last = steadyValues_[name];
    if (steadyValid_ && last == nchw) {
      steadySkipped_.insert(name);
      return;
    }
    last = nchw;
    if (steadyValid_) {
      // The steady ops run again and read every steady input: those whose upload was
      // skipped since the last run (not persistent when only steady ops read them, so
      // other tensors may have used their memory) go up again.
      steadyValid_ = false;
      for (const auto& other : steadySkipped_)
        if (other != name)
          tensors_[static_cast<size_t>(graph_.inputs().at(other))]->upload(steadyValues_.at(other));
    }
    steadySkipped_.clear();
  }
  tensors_[static_cast<size_t>(it->second)]->upload(nchw);
}

std::vector<float> GraphExecutor::output(const std::string& name) const {
  auto it = graph_.outputs().find(name);
  if (it == graph_.outputs().end()) throw Error(graph_.component() + " has no output '" + name + "'");
  return tensors_[static_cast<size_t>(it->second)]->download();
}

// --check-finite: op by op, each finished before its output is read back, rather than
// downloading every output after the run: the planner reuses arena memory, so by the
// end of the run most ops' outputs have been overwritten by later ones. Earlier ops'
// outputs were checked, weights are checked at load and host inputs come from the
// host, so the first op whose output is non-finite is where the NaN/inf began.
// download() converts f16 storage and NC4HW4 layouts to float NCHW.
void GraphExecutor::checkOutputFinite(size_t node) const {
  const GraphNode& n = graph_.nodes()[node];
  const std::vector<float> out = tensors_[static_cast<size_t>(n.output())]->download();
  const size_t i = firstNonFinite(out);
  if (i == out.size()) return;
  throw RunFailure(graph_.component() + ": --check-finite: op " + std::to_string(node) + " " + n.label + " (" +
              choices_[node].instance + ", variant " + choices_[node].variant + ") wrote " + nonFiniteAt(out, i) +
              " of its output, the first op to write one" + (warmingUp_ ? " (the warm-up run on zero inputs)" : ""));
}

RunTiming GraphExecutor::run(bool profile) {
  RunTiming t;
  const auto start = std::chrono::steady_clock::now();
  const Backend::SyncCounts sync0 = be_.syncCounts();
  const auto& nodes = graph_.nodes();
  std::vector<OpEvents> events(profile ? nodes.size() : 0);
  EventPtr firstEvent, lastEvent;
  // Steady ops whose outputs an earlier run left (findSteadyOps) are skipped, and so are
  // the uploads of streamed weights only they read.
  const bool reuse = steadyValid_;
  auto needed = [&](int id) { return !(reuse && steadyOnlyWeight_[static_cast<size_t>(id)]); };
  // Without --profile only the run's span is read (its first op's first event's start,
  // its last op's last event's end): after the first op with events (recorded as usual,
  // so its first event has its start even where the op leaves a one-time dispatch out of
  // its events, as conv's resident weight transforms do), the backend may leave out the
  // per-command timing (Backend::beginSpanOnly), which on Vulkan costs a timestamp pair
  // per dispatch.
  struct SpanOnly {
    Backend* be = nullptr;
    ~SpanOnly() {
      if (be) be->endSpanOnly();
    }
  } spanOnly;
  for (size_t i = 0; i < nodes.size(); ++i) {
    // Streamed weights (weight_stream.h): the uploads starting with this op, then the
    // ones it reads.
    if (!uploadsAt_[i].empty()) {
      std::vector<WeightStream::Upload> ups;
      for (int id : uploadsAt_[i])
        if (needed(id)) ups.push_back({id, tensors_[static_cast<size_t>(id)].get(), hostWeights_[static_cast<size_t>(id)]});
      if (!ups.empty()) stream_->start(i, ups);
    }
    if (!readyBy_[i].empty()) {
      std::vector<int> ready;
      for (int id : readyBy_[i])
        if (needed(id)) ready.push_back(id);
      if (!ready.empty()) stream_->waitFor(ready);
    }
    if (reuse && steadyOp_[i]) {
      ++t.reusedOps;
      continue;
    }
    OpEvents ev = ops_[i]->enqueue(args_[i]);
    if (opt_.checkFinite) {
      be_.finish();
      checkOutputFinite(i);
    }
    if (ev.empty()) continue;
    if (!firstEvent) {
      firstEvent = ev.front();
      if (!profile) {
        be_.beginSpanOnly();
        spanOnly.be = &be_;
      }
    }
    lastEvent = ev.back();
    if (profile) events[i] = std::move(ev);
  }
  if (spanOnly.be) {
    be_.endSpanOnly();
    spanOnly.be = nullptr;
  }
  be_.finish();
  const Backend::SyncCounts sync1 = be_.syncCounts();
  t.dispatches = sync1.dispatches - sync0.dispatches;
  t.barriers = sync1.barriers - sync0.barriers;
  // Valid until a steady input gets other values (setInput).
  steadyValid_ = std::find(steadyOp_.begin(), steadyOp_.end(), true) != steadyOp_.end();
  steadySkipped_.clear();  // read by no op while the outputs are reused
  t.wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (firstEvent) {
    // Span-only recording must leave the span's two ends stamped: a missing one would read
    // as a zero or absurd device time, never to be reported as one.
    if (firstEvent->startNs() == UINT64_MAX || lastEvent->endNs() == 0)
      throw Error(graph_.component() + ": the run's first or last command has no timestamp (span-only recording)");
    t.deviceMs = eventSpanNs({firstEvent, lastEvent}) * 1e-6;
  }
  if (profile)
    for (size_t i = 0; i < events.size(); ++i)
      if (!events[i].empty()) t.nodes.push_back({static_cast<int>(i), eventSpanNs(events[i]) * 1e-3});
  return t;
}

}  // namespace sdspeed
