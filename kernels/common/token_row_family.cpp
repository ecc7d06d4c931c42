#include "kernels/common/token_row_family.h"

#include <sstream>

#include "kernels/common/half_variant.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

std::string formatDouble(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

const TokenRowProblem& asRow(const Problem& p, const std::string& family) {
  auto* r = dynamic_cast<const TokenRowProblem*>(&p);
  if (!r || r->family != family) throw Error(family + " given a problem of another family: " + p.text());
  return *r;
}

VariantDef makeVariant(const std::string& name, const std::string& define, const std::string& summary) {
  VariantDef v;
  v.name = name;
  v.summary = summary;
  v.defines = {{define, 1}};
  v.params = {{"WG", {64, 32, 128, 256}, "work-group size (a power of two)"}};
  v.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]); };
  v.localMemBytes = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]) * 8; };  // float2 per item
  return v;
}

// split: TX tokens per work-group, each token's channel slices (4 channels) dealt round-robin
// over PARTS work-items; the parts' sums meet in local memory, added in part order (so the
// result does not depend on scheduling). Why: on NC4HW4 a token's channels are HW * 4
// elements apart, so cooperative's work-group per token reads 8-byte pieces scattered over
// the tensor (27 us for SD 1.5's 2x320x1x4096 LayerNorm on an H100, about 10x its bytes'
// time), while per_item's one work-item per token leaves a GPU mostly idle (8192 tokens)
// with C / 4 dependent steps each. Here a warp's lanes read adjacent tokens (contiguous in
// both layouts) and PARTS work-items share each token's walk.
VariantDef makeSplitVariant() {
  VariantDef v;
  v.name = "split";
  v.summary = "TX tokens per work-group, each token's channels dealt over PARTS work-items";
  v.defines = {{"TOKEN_SPLIT", 1}};
  // Defaults: PARTS = 16 was the best split point at all five of SD 1.5's LayerNorm
  // instances on an H100 (results/vulkan/session45/README.md).
  v.params = {{"TX", {32, 16, 64, 8}, "tokens per work-group (adjacent tokens: the coalesced dimension)"},
              {"PARTS", {16, 8, 4, 2, 32, 64}, "work-items sharing one token's channels"}};
  v.constraints = {{"TX * PARTS in 64..512", [](const ParamPoint& p) {
                      const int wg = p["TX"] * p["PARTS"];
                      return wg >= 64 && wg <= 512;
                    }}};
  v.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["TX"] * p["PARTS"]); };
  v.localMemBytes = [](const ParamPoint& p) { return static_cast<size_t>(p["TX"] * p["PARTS"]) * 8; };
  // Launch geometry for one problem, from the base point (the declared defaults, or a point
  // tuned on another instance): PARTS halved while some part would get no slice at all (C
  // under 4 * PARTS channels), TX halved while the dispatch would have fewer than 128
  // work-groups (a few-token instance, e.g. 2x1280x1x64) or the group exceeds 512; then
  // doubled back to the 64-item lower bound. A tuned point's PARTS and TX stay where the
  // instance feeds them.
  v.fitDefaults = [](const ParamPoint& base, const Problem& prob) {
    const Shape s = prob.shape();
    const int64_t slices = (s.c + 3) / 4, tokens = s.n * s.hw();
    int parts = base["PARTS"], tx = base["TX"];
    while (parts > 2 && slices < parts) parts /= 2;
    while (tx > 8 && (tx * parts > 512 || (tokens + tx - 1) / tx < 128)) tx /= 2;
    while (tx * parts < 64 && tx < 64) tx *= 2;  // the work-group's lower bound
    return std::map<std::string, int>{{"TX", tx}, {"PARTS", parts}};
  };
  v.defaultRank = 1;
  return v;
}

}  // namespace

std::string TokenRowProblem::text() const {
  std::string t = family + " " + dims.text() + " " + attrName + "=" + formatDouble(attr);
  if (inputOffset != 0.0f) t += " offset=" + formatDouble(inputOffset);
  return t;
}

std::map<std::string, std::string> TokenRowProblem::attributes() const { return {{attrName, formatDouble(attr)}}; }

TokenRowFamily::TokenRowFamily(std::string name, std::string kernelPrefix, bool affine, std::string attrName,
                               double attrDefault)
    : name_(std::move(name)), prefix_(std::move(kernelPrefix)), attrName_(std::move(attrName)), affine_(affine),
      attrDefault_(attrDefault),
      variants_{makeVariant("per_item", "PER_ITEM", "one work-item per token, looping over the channels"),
                makeVariant("cooperative", "COOPERATIVE", "one work-group per token with a local-memory reduction"),
                // Its kernel <prefix>_cooperative_f16 (what stays f32: the family's .cl).
                halfVariant(makeVariant("cooperative", "COOPERATIVE", ""),
                            "cooperative computing per element in half (cl_khr_fp16); the row's reduction in f32"),
                makeSplitVariant(),
                halfVariant(makeSplitVariant(),
                            "split computing per element in half (cl_khr_fp16); the token's sums in f32")} {}

std::vector<TensorSlot> TokenRowFamily::slots() const {
  if (!affine_) return {{"x", Access::Read, true}, {"y", Access::Write, true}};
  return {{"x", Access::Read, true}, {"gamma", Access::Read, false}, {"beta", Access::Read, false},
          {"y", Access::Write, true}};
}

std::vector<Shape> TokenRowFamily::shapes(const Problem& p) const {
  const Shape& s = asRow(p, name_).dims;
  if (!affine_) return {s, s};
  return {s, {1, s.c, 1, 1}, {1, s.c, 1, 1}, s};
}

ProblemPtr TokenRowFamily::problem(Shape s, double attr, float inputOffset) const {
  validateAttr(attr);
  auto p = std::make_shared<TokenRowProblem>();
  p->family = name_;
  p->attrName = attrName_;
  p->dims = s;
  p->attr = attr;
  p->inputOffset = inputOffset;
  return p;
}

ProblemPtr TokenRowFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  double attr = attrDefault_;
  for (const auto& [k, v] : attrs) {
    if (k != attrName_) throw Error("unknown " + name_ + " attribute '" + k + "' (known: " + attrName_ + ")");
    try {
      size_t used = 0;
      attr = std::stod(v, &used);
      if (used != v.size()) throw std::invalid_argument(v);
    } catch (const std::logic_error&) {
      throw Error("bad value '" + v + "' for " + name_ + " attribute " + attrName_);
    }
  }
  return problem(shape, attr);
}

std::vector<HostTensor> TokenRowFamily::makeInputs(const Problem& p, std::mt19937_64& rng) const {
  const auto& rp = asRow(p, name_);
  const Shape& s = rp.dims;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  std::vector<HostTensor> in;
  for (const Shape& sh : shapes(p)) in.push_back({sh, {}});
  // Per token a mean in [-2, 2] (+ the offset) and a scale in [0.5, 2]: tokens differ,
  // so a kernel mixing them up is caught.
  std::vector<float> mean(static_cast<size_t>(s.n * s.hw())), scale(mean.size());
  for (size_t i = 0; i < mean.size(); ++i) {
    mean[i] = rp.inputOffset + 4.0f * uni(rng) - 2.0f;
    scale[i] = 0.5f + 1.5f * uni(rng);
  }
  in[0].data.resize(static_cast<size_t>(s.elements()));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t t = 0; t < s.hw(); ++t) {
        const size_t tok = static_cast<size_t>(n * s.hw() + t);
        in[0].data[static_cast<size_t>((n * s.c + c) * s.hw() + t)] = mean[tok] + scale[tok] * normal(rng);
      }
  if (affine_)
    for (int64_t c = 0; c < s.c; ++c) {
      in[1].data.push_back(1.0f + 0.3f * normal(rng));
      in[2].data.push_back(0.5f * normal(rng));
    }
  return in;
}

std::vector<double> TokenRowFamily::reference(const Problem& p, const std::vector<HostTensor>& in) const {
  return referenceOf(asRow(p, name_), in);
}

std::unique_ptr<PreparedOp> TokenRowFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                    const Problem& prob, const StorageFormat& f) const {
  const auto& rp = asRow(prob, name_);
  const ClBuiltProgram program = buildProgram(ctx, v, p, f, 1);
  const size_t hw = static_cast<size_t>(rp.dims.hw()), n = static_cast<size_t>(rp.dims.n);
  Launch l;
  if (v.name == "per_item") {
    l = Launch::cover(2, {hw, n, 1}, {static_cast<size_t>(p["WG"]), 1, 1});
  } else if (baseVariantName(v) == "split") {
    const size_t tx = p["TX"], parts = p["PARTS"];
    l = Launch::cover(3, {hw, parts, n}, {tx, parts, 1});
  } else {
    const size_t wg = p["WG"];
    l = Launch::cover(1, {wg * n * hw, 1, 1}, {wg, 1, 1});  // a work-group per row
  }
  // The attribute is the kernels' one scalar, under its attribute name (eps, scale).
  const float attr = static_cast<float>(rp.attr);
  return std::make_unique<SingleKernelOp>(ctx, slots(), program, prefix_ + "_" + v.name, l,
                                          [attr, name = attrName_](KernelArgs& a) { a.f32(name, attr); });
}

}  // namespace sdspeed
