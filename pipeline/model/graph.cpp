#include "pipeline/model/graph.h"

#include "kernels/common/elementwise.h"
#include "kernels/registry.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {

std::string fmtAttr(double v) { return attrText(v); }

int GraphNode::output() const {
  const auto slots = family->slots();
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].access == Access::Write) return args[i];
  throw Error(label + ": family " + family->name() + " has no written slot");
}

int Graph::addInput(const std::string& name, Shape shape, bool activation) {
  if (inputs_.count(name)) throw Error(component_ + ": input '" + name + "' added twice");
  GraphTensor t;
  t.kind = activation ? GraphTensor::Kind::Activation : GraphTensor::Kind::HostInput;
  t.shape = shape;
  t.name = name;
  tensors_.push_back(t);
  inputs_[name] = static_cast<int>(tensors_.size()) - 1;
  return inputs_[name];
}

int Graph::addWeight(const std::string& name, Shape shape, std::vector<int64_t> diskShape) {
  int64_t disk = 1;
  for (int64_t d : diskShape) disk *= d;
  if (disk != shape.elements())
    throw Error(component_ + ": weight " + name + " has " + std::to_string(disk) + " elements on disk but the op needs " +
                shape.text());
  GraphTensor t;
  t.kind = GraphTensor::Kind::Weight;
  t.shape = shape;
  t.name = name;
  t.diskShape = std::move(diskShape);
  tensors_.push_back(t);
  return static_cast<int>(tensors_.size()) - 1;
}

int Graph::view(int base, Shape shape) {
  const GraphTensor& b = tensor(base);
  if (b.kind != GraphTensor::Kind::Activation) throw Error(component_ + ": only activations can be viewed");
  if (b.shape.elements() != shape.elements() || b.shape.n != shape.n || b.shape.c != shape.c)
    throw Error(component_ + ": a view of " + b.shape.text() + " as " + shape.text() +
                " would move channels (views reshape H x W only)");
  GraphTensor t;
  t.shape = shape;
  t.name = b.name + ".view";
  t.viewOf = storageOf(base);
  tensors_.push_back(t);
  return static_cast<int>(tensors_.size()) - 1;
}

int Graph::storageOf(int id) const {
  const GraphTensor& t = tensor(id);
  return t.viewOf >= 0 ? t.viewOf : id;
}

int Graph::add(const std::string& familyName, const ProblemPtr& problem, const std::map<std::string, int>& bound,
               const std::string& label) {
  GraphNode n;
  n.family = &findFamily(familyName);
  n.problem = problem;
  n.label = label;
  const auto slots = n.family->slots();
  const auto shapes = n.family->shapes(*problem);
  for (const auto& [name, id] : bound) {
    bool known = false;
    for (const auto& s : slots) known |= s.name == name;
    if (!known) throw Error(label + ": family " + familyName + " has no slot '" + name + "'");
  }
  int out = -1;
  for (size_t i = 0; i < slots.size(); ++i) {
    const TensorSlot& s = slots[i];
    if (s.access == Access::Write) {
      GraphTensor t;
      t.shape = shapes[i];
      t.name = label;
      tensors_.push_back(t);
      out = static_cast<int>(tensors_.size()) - 1;
      n.args.push_back(out);
      continue;
    }
    auto it = bound.find(s.name);
    if (it == bound.end()) {
      n.args.push_back(-1);
      continue;
    }
    const GraphTensor& t = tensor(it->second);
    if (t.shape != shapes[i])
      throw Error(label + ": " + familyName + " slot '" + s.name + "' needs " + shapes[i].text() + ", given " +
                  t.shape.text() + " (" + t.name + ")");
    if (s.activation != (t.kind == GraphTensor::Kind::Activation))
      throw Error(label + ": " + familyName + " slot '" + s.name + "' given a tensor of the wrong kind (" + t.name + ")");
    n.args.push_back(it->second);
  }
  nodes_.push_back(std::move(n));
  return out;
}

void Graph::markOutput(const std::string& name, int t) { outputs_[name] = t; }

void Graph::markSteady(const std::string& input) {
  if (!inputs_.count(input)) throw Error(component_ + ": no input '" + input + "' to mark steady");
  steady_.insert(input);
}

std::vector<bool> Graph::steadyNodes() const {
  std::vector<bool> node(nodes_.size(), false);
  if (steady_.empty()) return node;
  std::vector<bool> steady(tensors_.size(), false);  // by storage tensor
  for (const auto& name : steady_) steady[static_cast<size_t>(storageOf(inputs_.at(name)))] = true;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const GraphNode& n = nodes_[i];
    const auto slots = n.family->slots();
    bool any = false, all = true;
    for (size_t k = 0; k < slots.size(); ++k) {
      if (n.args[k] < 0 || slots[k].access == Access::Write) continue;
      const auto s = static_cast<size_t>(storageOf(n.args[k]));
      if (tensors_[s].kind == GraphTensor::Kind::Weight) continue;
      if (steady[s]) any = true;
      else all = false;
    }
    if (!any || !all) continue;
    node[i] = true;
    steady[static_cast<size_t>(storageOf(n.output()))] = true;
  }
  return node;
}

int GraphBuilder::weight(const std::string& name, Shape shape, std::vector<int64_t> diskShape) {
  return g_.addWeight(name, shape, std::move(diskShape));
}

int GraphBuilder::conv(int x, const std::string& prefix, int64_t cout, int k, int stride, int pad, int temb,
                       int residual) {
  const Shape s = shape(x);
  auto prob = findFamily("conv").makeProblem(
      s, {{"cout", std::to_string(cout)}, {"k", std::to_string(k)}, {"stride", std::to_string(stride)},
          {"pad", std::to_string(pad)}, {"bias", "1"}, {"temb", temb >= 0 ? "1" : "0"},
          {"residual", residual >= 0 ? "1" : "0"}});
  std::map<std::string, int> b = {{"x", x},
                                  {"weight", weight(prefix + ".weight", {cout, s.c, k, k}, {cout, s.c, k, k})},
                                  {"bias", weight(prefix + ".bias", {1, cout, 1, 1}, {cout})}};
  if (temb >= 0) b["temb"] = temb;
  if (residual >= 0) b["residual"] = residual;
  return g_.add("conv", prob, b, prefix);
}

int GraphBuilder::groupNorm(int x, const std::string& prefix, int64_t groups, double eps, bool silu) {
  if (silu && !opt_.fuseActivations) return activation(groupNorm(x, prefix, groups, eps, false), "silu", prefix + ".silu");
  const Shape s = shape(x);
  auto prob = findFamily("groupnorm").makeProblem(
      s, {{"g", std::to_string(groups)}, {"eps", fmtAttr(eps)}, {"silu", silu ? "1" : "0"}, {"residual", "0"}});
  return g_.add("groupnorm", prob,
                {{"x", x},
                 {"gamma", weight(prefix + ".weight", {1, s.c, 1, 1}, {s.c})},
                 {"beta", weight(prefix + ".bias", {1, s.c, 1, 1}, {s.c})}},
                prefix);
}

int GraphBuilder::layerNorm(int x, const std::string& prefix, double eps) {
  const Shape s = shape(x);
  auto prob = findFamily("layernorm").makeProblem(s, {{"eps", fmtAttr(eps)}});
  return g_.add("layernorm", prob,
                {{"x", x},
                 {"gamma", weight(prefix + ".weight", {1, s.c, 1, 1}, {s.c})},
                 {"beta", weight(prefix + ".bias", {1, s.c, 1, 1}, {s.c})}},
                prefix);
}

int GraphBuilder::linear(int x, const std::string& prefix, int64_t rows, bool bias, const std::string& epilogue,
                         int residual, std::vector<int64_t> diskShape) {
  if (epilogue != "none" && !opt_.fuseActivations) {
    if (residual >= 0) throw Error(prefix + ": an unfused epilogue with a residual is not supported");
    return activation(linear(x, prefix, rows, bias, "none", -1, diskShape), epilogue, prefix + ".act");
  }
  const Shape s = shape(x);
  if (diskShape.empty()) diskShape = {rows, s.c};
  auto prob = findFamily("gemm").makeProblem(s, {{"n", std::to_string(rows)},
                                                 {"epilogue", epilogue},
                                                 {"bias", bias ? "1" : "0"},
                                                 {"residual", residual >= 0 ? "1" : "0"}});
  std::map<std::string, int> b = {{"x", x}, {"w", weight(prefix + ".weight", {rows, s.c, 1, 1}, diskShape)}};
  if (bias) b["bias"] = weight(prefix + ".bias", {1, rows, 1, 1}, {rows});
  if (residual >= 0) b["residual"] = residual;
  return g_.add("gemm", prob, b, prefix);
}

int GraphBuilder::attention(int q, int k, int v, int64_t heads, bool causal, const std::string& label) {
  const Shape s = shape(q);
  auto prob = findFamily("attention").makeProblem(s, {{"heads", std::to_string(heads)},
                                                      {"kv", std::to_string(shape(k).w)},
                                                      {"causal", causal ? "1" : "0"},
                                                      {"mask", "0"}});
  return g_.add("attention", prob, {{"q", q}, {"k", k}, {"v", v}}, label);
}

int GraphBuilder::activation(int x, const std::string& fn, const std::string& label) {
  auto prob = findFamily("activation").makeProblem(shape(x), {{"fn", fn}});
  return g_.add("activation", prob, {{"x", x}}, label);
}

int GraphBuilder::upsample2x(int x, const std::string& label) {
  auto prob = findFamily("upsample").makeProblem(shape(x), {{"scale", "2"}});
  return g_.add("upsample", prob, {{"x", x}}, label);
}

int GraphBuilder::concat(int a, int b, const std::string& label) {
  const Shape sa = shape(a), sb = shape(b);
  if (sa.n != sb.n || sa.h != sb.h || sa.w != sb.w)
    throw Error(label + ": cannot concatenate " + sa.text() + " and " + sb.text() + " along channels");
  auto prob = findFamily("concat").makeProblem(sa, {{"c2", std::to_string(sb.c)}});
  return g_.add("concat", prob, {{"a", a}, {"b", b}}, label);
}

int GraphBuilder::toTokens(int x) {
  const Shape s = shape(x);
  return g_.view(x, {s.n, s.c, 1, s.h * s.w});
}

int GraphBuilder::toMap(int tokens, int64_t h, int64_t w) {
  const Shape s = shape(tokens);
  return g_.view(tokens, {s.n, s.c, h, w});
}

}  // namespace sdspeed
