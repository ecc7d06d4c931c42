#include "pipeline/exec/graph_executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>

#include "kernels/registry.h"
#include "runtime/cl_error.h"
#include "runtime/timing.h"

namespace sdspeed {
namespace {

// Host inputs (token ids, timesteps) are f32 NCHW whatever the weight format.
const StorageFormat kHostInputFormat{DType::F32, Storage::Buffer, Layout::NCHW};

// The chosen point if the family can run it here, else why not.
std::string whyNot(const Family& fam, const TunedChoice& c, const GraphNode& n, const StorageFormat& f,
                   const DeviceInfo& dev) {
  try {
    const VariantDef& v = fam.variant(c.variant);
    return fam.unsupportedReason(v, v.parsePoint(c.params), *n.problem, f, dev);
  } catch (const Error& e) {
    // A database row naming a variant or parameter this build no longer has.
    return std::string("stale tuned point: ") + e.what();
  }
}

// The variant's point this node can run: its tuned point (exact, nearest, device or
// vendor default), else its declared defaults; empty when neither can run it (the
// first refusal goes into `refused`).
std::optional<TunedChoice> runnablePoint(const TunedChooser& chooser, const Family& fam, const OpInstance& inst,
                                         const std::string& variant, const GraphNode& n, const StorageFormat& f,
                                         const DeviceInfo& dev, std::string& refused) {
  for (TunedChoice c :
       {chooser.choose(fam, inst, variant), TunedChoice{variant, fam.variant(variant).defaults().text(), "defaults"}}) {
    const std::string why = whyNot(fam, c, n, f, dev);
    if (why.empty()) return c;
    if (refused.empty()) refused = c.variant + " " + c.params + ": " + why;
  }
  return std::nullopt;
}

// The database's choice for the node; with an allowed list, the fastest allowed
// variant when the database times every allowed one that can run the instance, else
// the last allowed one that can (lists end with the newest variant); when nothing
// chosen can run the instance, the first variant, in the family's order, whose tuned
// point or defaults can (marked as a fallback).
NodeChoice choose(const TunedChooser& chooser, const GraphNode& n, const ExecOptions& opt, const DeviceInfo& dev) {
  const Family& fam = *n.family;
  const OpInstance inst = OpInstance::of(fam, *n.problem, opt.format);
  auto allowed = opt.variants.find(fam.name());
  std::string refused;
  if (allowed == opt.variants.end()) {
    TunedChoice c = chooser.choose(fam, inst);
    const std::string why = whyNot(fam, c, n, opt.format, dev);
    if (why.empty()) return {inst.text(), c.variant, c.params, c.source};
    refused = c.variant + " " + c.params + ": " + why;
  } else {
    std::vector<TunedChoice> candidates;  // one per allowed variant that can run the instance
    for (const auto& v : allowed->second)
      if (auto c = runnablePoint(chooser, fam, inst, v, n, opt.format, dev, refused)) candidates.push_back(*c);
    if (!candidates.empty()) {
      // All timed: the fastest. Otherwise the last allowed one (lists put the newest
      // variant last, so an ablation row runs what it adds unless it is slower).
      // Only exact entries of this device time this instance; a nearest shape's or another
      // device's time says little about it.
      const bool allTimed = std::all_of(candidates.begin(), candidates.end(), [](const TunedChoice& c) {
        return c.medianUs > 0 && c.source == "exact";
      });
      const TunedChoice& c = allTimed ? *std::min_element(candidates.begin(), candidates.end(),
                                                          [](const auto& a, const auto& b) { return a.medianUs < b.medianUs; })
                                      : candidates.back();
      return {inst.text(), c.variant, c.params, c.source};
    }
  }
  std::string ignored;
  for (const auto& v : fam.variants())
    if (auto a = runnablePoint(chooser, fam, inst, v.name, n, opt.format, dev, ignored))
      return {inst.text(), a->variant, a->params, a->source + "; fallback, " + refused};
  throw Error(n.label + ": no variant of " + fam.name() + " can run " + inst.text() + " on " + dev.name + " (" +
              refused + ")");
}

}  // namespace

void parseWeightsSpec(const std::string& text, const std::string& what, ExecOptions& opt) {
  std::map<std::string, DType> overrides;
  std::optional<DType> all;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      if (all) throw Error(what + ": more than one default weight format in '" + text + "' (want f32|f16[,COMPONENT=f32|f16..])");
      all = parseDType(item, what);
    } else {
      const std::string comp = item.substr(0, eq);
      const auto& known = pipelineComponents();
      if (std::find(known.begin(), known.end(), comp) == known.end())
        throw Error(what + ": unknown component '" + comp + "' in '" + text + "' (want text_encoder, unet or vae_decoder)");
      overrides[comp] = parseDType(item.substr(eq + 1), what);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  opt.format.weights = all.value_or(DType::F32);
  opt.componentWeights = overrides;
}

std::string weightsSpecText(const ExecOptions& opt) {
  std::string s = dtypeName(opt.format.weights);
  for (const auto& c : pipelineComponents())
    if (componentWeightFormat(opt, c) != opt.format.weights) s += "," + c + "=" + dtypeName(componentWeightFormat(opt, c));
  return s;
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

ActivationUsage activationUsage(const Graph& graph, const StorageFormat& format) {
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

GraphExecutor::GraphExecutor(Context& ctx, const Graph& graph, const WeightSource& weights, const ExecOptions& options)
    : ctx_(ctx), graph_(graph), opt_(options) {
  if (opt_.format.storage != Storage::Buffer)
    throw Error("the pipeline runs on buffer storage (views reshape tensors in place); got " + opt_.format.name());
  for (const auto& [fam, list] : opt_.variants)
    for (const auto& v : list) findFamily(fam).variant(v);  // unknown names: an Error here
  allocate(weights);  // first: a bad checkpoint fails before any program is built
  bindArguments();
  const TunedChooser chooser(opt_.dbDir, ctx.device());
  for (const GraphNode& n : graph_.nodes()) {
    NodeChoice c = choose(chooser, n, opt_, ctx.device());
    const VariantDef& v = n.family->variant(c.variant);
    ops_.push_back(n.family->prepare(ctx, v, v.parsePoint(c.params), *n.problem, opt_.format));
    memory_.scratchBytes += ops_.back()->scratchBytes();
    choices_.push_back(std::move(c));
  }
}

GraphExecutor::~GraphExecutor() {
  // Kernels (which hold the buffers as arguments) first, then the tensors (sub-buffers
  // and views), the arena last, after the queue has drained: the order drivers expect,
  // whatever the members' declaration order.
  try {
    ctx_.finish();
  } catch (const std::exception&) {
  }
  ops_.clear();
  args_.clear();
  placeholders_.clear();
  tensors_.clear();
  arena_ = ClMem();
}

void GraphExecutor::allocate(const WeightSource& weights) {
  const auto& ts = graph_.tensors();
  tensors_.resize(ts.size());
  const ActivationUsage planned = activationUsage(graph_, opt_.format);
  const std::vector<TensorUsage>& usage = planned.records;
  const std::vector<int>& owners = planned.tensors;
  for (size_t id = 0; id < ts.size(); ++id) {
    const GraphTensor& t = ts[id];
    if (t.kind == GraphTensor::Kind::Weight) {
      auto d = std::make_unique<DeviceTensor>(ctx_, TensorDesc{t.shape, opt_.format.params()});
      const std::vector<float> values = weights.load(t.name, t.diskShape);
      if (opt_.format.weights == DType::F16) checkFitsF16(values, graph_.component(), t.name);
      d->upload(values);
      memory_.weightBytes += d->desc().bytes();
      tensors_[id] = std::move(d);
    } else if (t.kind == GraphTensor::Kind::HostInput) {
      tensors_[id] = std::make_unique<DeviceTensor>(ctx_, TensorDesc{t.shape, kHostInputFormat});
    }
  }

  const uint64_t align = ctx_.subBufferAlignment();
  memory_.planBytes = planSizes(planned, align);
  if (opt_.planner == "none") {
    for (size_t k = 0; k < owners.size(); ++k) {
      const GraphTensor& t = ts[static_cast<size_t>(owners[k])];
      tensors_[static_cast<size_t>(owners[k])] = std::make_unique<DeviceTensor>(ctx_, TensorDesc{t.shape, opt_.format});
      memory_.activationBytes += tensors_[static_cast<size_t>(owners[k])]->desc().bytes();
    }
  } else {
    const MemoryPlan plan = planMemory(usage, parsePlanStrategy(opt_.planner), align);
    const auto bases = plan.arenaOffsets();
    const uint64_t arenaBytes = bases.back();
    if (arenaBytes > ctx_.device().maxAllocBytes)
      throw Error("the " + graph_.component() + " activation arena needs " + std::to_string(arenaBytes >> 20) +
                  " MiB, more than the device's largest allocation (" +
                  std::to_string(ctx_.device().maxAllocBytes >> 20) + " MiB); try --planner none");
    arena_ = ctx_.createBuffer(arenaBytes);
    memory_.activationBytes = arenaBytes;
    for (size_t k = 0; k < owners.size(); ++k) {
      const GraphTensor& t = ts[static_cast<size_t>(owners[k])];
      const TensorDesc desc{t.shape, opt_.format};
      const uint64_t offset = bases[plan.placements[k].buffer] + plan.placements[k].offset;
      tensors_[static_cast<size_t>(owners[k])] =
          std::make_unique<DeviceTensor>(ctx_, desc, ctx_.createSubBuffer(arena_.get(), offset, desc.bytes()));
    }
  }
  // Views share their base's memory object.
  for (size_t id = 0; id < ts.size(); ++id) {
    const GraphTensor& t = ts[id];
    if (t.viewOf < 0 || !tensors_[static_cast<size_t>(t.viewOf)]) continue;
    cl_mem m = tensors_[static_cast<size_t>(t.viewOf)]->mem();
    clCheck(clRetainMemObject(m), "clRetainMemObject");
    tensors_[id] = std::make_unique<DeviceTensor>(ctx_, TensorDesc{t.shape, opt_.format}, ClMem(m));
  }
}

// Each node's tensors in slot order, resolved once (run() is the hot path): unused slots
// get a zero placeholder of the slot's shape, one per (shape, kind), shared by nodes.
void GraphExecutor::bindArguments() {
  std::map<std::pair<std::string, std::string>, std::unique_ptr<DeviceTensor>> placeholders;
  for (const GraphNode& n : graph_.nodes()) {
    const auto slots = n.family->slots();
    const auto shapes = n.family->shapes(*n.problem);
    std::vector<DeviceTensor*> args;
    for (size_t s = 0; s < slots.size(); ++s) {
      if (n.args[s] >= 0) {
        DeviceTensor* t = tensors_[static_cast<size_t>(n.args[s])].get();
        // A weight bound to a host-input slot (or the reverse) would be read in the wrong dtype.
        if (!slots[s].activation && !(t->desc().format == slotFormat(slots[s], opt_.format)))
          throw Error(n.label + ": slot " + slots[s].name + " holds " + t->desc().format.name() + ", the kernel reads " +
                      slotFormat(slots[s], opt_.format).name());
        args.push_back(t);
        continue;
      }
      const StorageFormat f = slotFormat(slots[s], opt_.format);  // what the kernel was built to read
      auto& p = placeholders[{shapes[s].text(), f.name()}];
      if (!p) {
        p = std::make_unique<DeviceTensor>(ctx_, TensorDesc{shapes[s], f});
        p->upload(std::vector<float>(static_cast<size_t>(shapes[s].elements()), 0.0f));
      }
      args.push_back(p.get());
    }
    args_.push_back(std::move(args));
  }
  for (auto& [key, p] : placeholders) placeholders_.push_back(std::move(p));
}

void GraphExecutor::warmUp() {
  // Zero inputs: valid token ids and timesteps, finite activations.
  for (const auto& [name, id] : graph_.inputs())
    setInput(name, std::vector<float>(static_cast<size_t>(graph_.tensor(id).shape.elements()), 0.0f));
  run(false);
}

void GraphExecutor::setInput(const std::string& name, const std::vector<float>& nchw) {
  auto it = graph_.inputs().find(name);
  if (it == graph_.inputs().end()) throw Error(graph_.component() + " has no input '" + name + "'");
  const Shape& s = graph_.tensor(it->second).shape;
  if (nchw.size() != static_cast<size_t>(s.elements()))
    throw Error(graph_.component() + " input '" + name + "' needs " + s.text() + " (" + std::to_string(s.elements()) +
                " values), given " + std::to_string(nchw.size()));
  tensors_[static_cast<size_t>(it->second)]->upload(nchw);
}

std::vector<float> GraphExecutor::output(const std::string& name) const {
  auto it = graph_.outputs().find(name);
  if (it == graph_.outputs().end()) throw Error(graph_.component() + " has no output '" + name + "'");
  return tensors_[static_cast<size_t>(it->second)]->download();
}

RunTiming GraphExecutor::run(bool profile) {
  RunTiming t;
  const auto start = std::chrono::steady_clock::now();
  const auto& nodes = graph_.nodes();
  std::vector<std::vector<ClEvent>> events(profile ? nodes.size() : 0);
  ClEvent firstEvent, lastEvent;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<ClEvent> ev = ops_[i]->enqueue(args_[i]);
    if (ev.empty()) continue;
    if (!firstEvent) firstEvent = ev.front();
    lastEvent = ev.back();
    if (profile) events[i] = std::move(ev);
  }
  ctx_.finish();
  t.wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (firstEvent) t.deviceMs = eventSpanNs({firstEvent, lastEvent}) * 1e-6;
  if (profile)
    for (size_t i = 0; i < events.size(); ++i)
      if (!events[i].empty()) t.nodes.push_back({static_cast<int>(i), eventSpanNs(events[i]) * 1e-3});
  return t;
}

}  // namespace sdspeed
