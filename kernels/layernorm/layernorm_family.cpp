#include "kernels/layernorm/layernorm_family.h"

#include <sstream>

#include "reference/layernorm.h"
#include "runtime/cl_error.h"

namespace sdspeed {
namespace {

const LayerNormProblem& asLayerNorm(const Problem& p) {
  auto* l = dynamic_cast<const LayerNormProblem*>(&p);
  if (!l) throw Error("layernorm given a problem of another family: " + p.text());
  return *l;
}

std::string formatDouble(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

VariantDef makeVariant(const std::string& name, const std::string& define, const std::string& summary) {
  VariantDef v;
  v.name = name;
  v.summary = summary;
  v.defines = {{define, 1}};
  v.params = {{"WG", {64, 32, 128, 256}, "work-group size"}};
  v.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]); };
  v.localMemBytes = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]) * 8; };  // float2 red[WG]
  return v;
}

class LayerNormOp : public PreparedOp {
 public:
  LayerNormOp(Context& ctx, const LayerNormFamily& fam, const VariantDef& v, const ParamPoint& p,
              const LayerNormProblem& prob, const StorageFormat& f)
      : ctx_(ctx), eps_(static_cast<cl_float>(prob.eps)) {
    cl_program program = fam.buildProgram(ctx, v, p, f, 1);
    const size_t wg = p["WG"], hw = static_cast<size_t>(prob.dims.hw()), n = static_cast<size_t>(prob.dims.n);
    if (v.name == "per_item") {
      kernel_ = ctx.createKernel(program, "ln_per_item");
      launch_ = {kernel_.get(), 2, {roundUp(hw, wg), n, 1}, {wg, 1, 1}};
    } else {
      kernel_ = ctx.createKernel(program, "ln_cooperative");
      launch_ = {kernel_.get(), 1, {wg * n * hw, 1, 1}, {wg, 1, 1}};
    }
  }

  std::vector<ClEvent> enqueue(const std::vector<DeviceTensor*>& t) override {
    if (!checked_) checkKernelLimits(ctx_, launch_), checked_ = true;
    int i = 0;
    for (auto* tensor : t) i = tensor->setArgs(kernel_.get(), i);  // x, gamma, beta, y
    setArg(kernel_.get(), i, eps_);
    std::vector<ClEvent> events;
    events.push_back(enqueueLaunch(ctx_.queue(), launch_));
    return events;
  }

 private:
  Context& ctx_;
  cl_float eps_;
  ClKernel kernel_;
  Launch launch_;
  bool checked_ = false;
};

}  // namespace

std::string LayerNormProblem::text() const {
  std::string t = "layernorm " + dims.text() + " eps=" + formatDouble(eps);
  if (inputMean != 0.0f) t += " mean=" + formatDouble(inputMean);
  return t;
}

std::map<std::string, std::string> LayerNormProblem::attributes() const { return {{"eps", formatDouble(eps)}}; }

LayerNormFamily::LayerNormFamily()
    : variants_{makeVariant("per_item", "PER_ITEM", "one work-item per token, looping over the channels"),
                makeVariant("cooperative", "COOPERATIVE", "one work-group per token with a local-memory reduction")} {}

ProblemPtr LayerNormFamily::problem(Shape s, double eps, float inputMean) {
  if (!(eps > 0)) throw Error("layernorm eps must be positive");
  auto p = std::make_shared<LayerNormProblem>();
  p->dims = s;
  p->eps = eps;
  p->inputMean = inputMean;
  return p;
}

std::vector<TensorSlot> LayerNormFamily::slots() const {
  return {{"x", Access::Read, true}, {"gamma", Access::Read, false}, {"beta", Access::Read, false},
          {"y", Access::Write, true}};
}

std::vector<ProblemPtr> LayerNormFamily::checkProblems(bool full) const {
  std::vector<ProblemPtr> out = {
      problem({1, 6, 1, 5}, 1e-5),           // C % 4 == 2
      problem({3, 13, 1, 9}, 1e-5),          // C % 4 == 1, odd token count
      problem({1, 40, 1, 64}, 1e-5, 1000.0f),  // large mean: no cancellation
      problem({2, 768, 1, 77}, 1e-5),        // CLIP text encoder
      problem({2, 320, 1, 256}, 1e-5),       // SD 1.5 transformer, 16x16 tokens, C=320
  };
  if (!full) return out;
  // SD 1.5 at 512x512 (batch 2): the transformer blocks' norms at 64x64, 32x32, 16x16, 8x8.
  for (auto [c, t] : {std::pair<int64_t, int64_t>{320, 4096}, {640, 1024}, {1280, 256}, {1280, 64}})
    out.push_back(problem({2, c, 1, t}, 1e-5));
  return out;
}

std::vector<Shape> LayerNormFamily::shapes(const Problem& p) const {
  const Shape& s = asLayerNorm(p).dims;
  return {s, {1, s.c, 1, 1}, {1, s.c, 1, 1}, s};
}

std::vector<HostTensor> LayerNormFamily::makeInputs(const Problem& p, std::mt19937_64& rng) const {
  const auto& lp = asLayerNorm(p);
  const Shape& s = lp.dims;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  std::vector<HostTensor> in = {{s, {}}, {{1, s.c, 1, 1}, {}}, {{1, s.c, 1, 1}, {}}, {s, {}}};
  // Per token a mean in [-2, 2] (+ the problem's offset) and a scale in [0.5, 2]:
  // tokens differ, so a kernel mixing them up is caught.
  std::vector<float> mean(static_cast<size_t>(s.n * s.hw())), scale(mean.size());
  for (size_t i = 0; i < mean.size(); ++i) mean[i] = lp.inputMean + 4.0f * uni(rng) - 2.0f, scale[i] = 0.5f + 1.5f * uni(rng);
  in[0].data.resize(static_cast<size_t>(s.elements()));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t t = 0; t < s.hw(); ++t) {
        const size_t tok = static_cast<size_t>(n * s.hw() + t);
        in[0].data[static_cast<size_t>((n * s.c + c) * s.hw() + t)] = mean[tok] + scale[tok] * normal(rng);
      }
  for (int64_t c = 0; c < s.c; ++c) {
    in[1].data.push_back(1.0f + 0.3f * normal(rng));
    in[2].data.push_back(0.5f * normal(rng));
  }
  return in;
}

std::vector<double> LayerNormFamily::reference(const Problem& p, const std::vector<HostTensor>& in) const {
  const auto& lp = asLayerNorm(p);
  return layerNormReference(lp.dims, lp.eps, in[0].data, in[1].data, in[2].data);
}

Tolerance LayerNormFamily::tolerance(DType dtype) const {
  // As GroupNorm (groupnorm_family.cpp): O(1) outputs, float statistics over C <= 1280
  // values per token with relative errors far under 1e-5; a mean near 1000 is kept
  // exact by the shift. f16 storage adds the output's rounding (2^-11 relative).
  if (dtype == DType::F32) return {2e-4, 2e-4, 2e-5};
  return {1e-3, 1e-3, 1e-3};
}

ProblemPtr LayerNormFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  double eps = 1e-5;
  for (const auto& [k, v] : attrs) {
    if (k != "eps") throw Error("unknown layernorm attribute '" + k + "' (known: eps)");
    try {
      size_t used = 0;
      eps = std::stod(v, &used);
      if (used != v.size()) throw std::invalid_argument(v);
    } catch (const std::logic_error&) {
      throw Error("bad value '" + v + "' for layernorm attribute eps");
    }
  }
  return problem(shape, eps);
}

std::unique_ptr<PreparedOp> LayerNormFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                     const Problem& prob, const StorageFormat& f) const {
  return std::make_unique<LayerNormOp>(ctx, *this, v, p, asLayerNorm(prob), f);
}

}  // namespace sdspeed
