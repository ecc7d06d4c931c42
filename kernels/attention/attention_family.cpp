#include "kernels/attention/attention_family.h"

#include "kernels/common/coopmat_rule.h"
#include "kernels/common/half_variant.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "kernels/common/elementwise.h"
#include "reference/attention.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

constexpr int kMaxFlashSlices = 40;  // D <= 160: q and the accumulator live in registers
constexpr size_t kScoreStage = 4 * 16;         // attn_scores: KS float4 per tile row
constexpr size_t kPvStage = 16 * 4 + 16 * 16 + 4;  // attn_pv: KL floats + KL float4 + a max per tile row

const AttentionProblem& asAttention(const Problem& p) {
  auto* a = dynamic_cast<const AttentionProblem*>(&p);
  if (!a) throw Error("attention given a problem of another family: " + p.text());
  return *a;
}

std::string fmt(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

VariantDef tiledVariant(const std::string& name, const std::string& define, const std::string& summary) {
  VariantDef v;
  v.name = name;
  v.summary = summary;
  v.defines = {{define, 1}};
  v.params = {{"T", {16, 8}, "work-group T x T of the two matmul kernels"},
              {"R", {2, 1, 4}, "R x R outputs per work-item (tile T*R)"},
              {"SWG", {128, 64, 256}, "work-group of the row reduction (a power of two)"}};
  v.workGroupSize = [](const ParamPoint& p) {
    return std::max(static_cast<size_t>(p["T"] * p["T"]), static_cast<size_t>(p["SWG"]));
  };
  v.localMemBytes = [](const ParamPoint& p) {
    const size_t tile = static_cast<size_t>(p["T"] * p["R"]);
    return std::max({tile * 2 * kScoreStage, tile * kPvStage, static_cast<size_t>(p["SWG"]) * 8});
  };
  return v;
}

}  // namespace

double AttentionProblem::effectiveScale() const {
  return scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(headDim));
}

Shape AttentionProblem::shape() const { return {batch, heads * headDim, 1, queries}; }

std::map<std::string, std::string> AttentionProblem::attributes() const {
  std::map<std::string, std::string> a = {{"heads", std::to_string(heads)}, {"kv", std::to_string(keys)},
                                          {"causal", causal ? "1" : "0"}, {"mask", mask ? "1" : "0"}};
  if (scale != 0) a["scale"] = fmt(scale);
  return a;
}

std::string AttentionProblem::text() const {
  std::string t = "attention " + shape().text();
  for (const auto& [k, v] : attributes()) t += " " + k + "=" + v;
  if (maskOffset != 0.0f) t += " offset=" + fmt(maskOffset);
  return t;
}

AttentionFamily::AttentionFamily() {
  variants_.push_back(tiledVariant("naive", "NAIVE",
                                   "Q K^T to an S x L buffer, a row softmax in place, then P V (three kernels)"));
  variants_.push_back(tiledVariant("partially_fused_softmax", "PARTIAL",
                                   "Q K^T to an S x L buffer, per-row (max, 1/sum), exp and 1/sum applied in P V"));
  VariantDef f;
  f.name = "flash";
  f.summary = "one kernel: RQ query rows per work-item, K/V tiles of BK keys in local memory, online softmax";
  f.defines = {{"FLASH", 1}};
  f.params = {{"WG", {64, 32, 128}, "work-items (query rows / RQ) per work-group"},
              {"BK", {32, 16, 64}, "keys per local-memory tile"},
              {"RQ", {1, 2}, "query rows per work-item"},
              {"KC", {16, 8}, "keys per online-softmax rescale (scores held in registers)"},
              {"NATIVE", {0, 1}, "1: native_exp2 (hardware approximation, accuracy-checked)"}};
  f.constraints = {{"BK % KC == 0", [](const ParamPoint& p) { return p["BK"] % p["KC"] == 0; }}};
  f.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]); };
  variants_.push_back(f);
  // flash in half (cl_khr_fp16): QK^T and PV products in half, per-chunk sums of them in
  // half, the softmax statistics, exponentials and rescaling in f32 (attention.cl).
  variants_.push_back(halfVariant(f, "flash computing its QK^T and PV products in half4 (cl_khr_fp16); the "
                                     "online softmax's max, sum and rescaling in f32"));
  variants_.push_back(coopMatVariant());  // tensor cores, Vulkan only (attention_coopmat.cpp)
}

ProblemPtr AttentionFamily::problem(int64_t batch, int64_t heads, int64_t headDim, int64_t queries, int64_t keys,
                                    bool causal, bool mask, float maskOffset) {
  if (batch < 1 || heads < 1 || headDim < 1 || queries < 1 || keys < 1)
    throw Error("attention needs positive batch, heads, head size, queries and keys");
  auto p = std::make_shared<AttentionProblem>();
  p->batch = batch;
  p->heads = heads;
  p->headDim = headDim;
  p->queries = queries;
  p->keys = keys;
  p->causal = causal;
  p->mask = mask;
  p->maskOffset = maskOffset;
  return p;
}

std::vector<TensorSlot> AttentionFamily::slots() const {
  return {{"q", Access::Read, true},
          {"k", Access::Read, true},
          {"v", Access::Read, true},
          {"mask", Access::Read, false, /*hostInput=*/true},
          {"out", Access::Write, true}};
}

std::vector<ProblemPtr> AttentionFamily::checkProblems(bool full) const {
  std::vector<ProblemPtr> out = {
      // Head sizes 8, 4 and 40 only: flash builds a program per head size (PoCL in CI).
      problem(2, 2, 8, 37, 37),                       // tiny-model head size, S not a multiple of any tile
      problem(2, 4, 4, 33, 77),                       // cross-attention L = 77 (tiny model, D = 4)
      problem(1, 2, 8, 77, 77, true),                 // causal, S = L = 77 (CLIP's, with D = 64, is in full)
      problem(1, 1, 40, 50, 45, false, true, 90.0f),  // SD's D = 40; mask with +-90 row offsets: large logits
  };
  if (!full) return out;
  // SD 1.5 at 512x512, batch 2, 8 heads: self- and cross-attention at each level.
  const int64_t levels[][2] = {{4096, 40}, {1024, 80}, {256, 160}, {64, 160}};
  for (const auto& l : levels) {
    out.push_back(problem(2, 8, l[1], l[0], l[0]));
    out.push_back(problem(2, 8, l[1], l[0], 77));
  }
  out.push_back(problem(1, 1, 512, 4096, 4096));     // VAE mid-block: 64 MB of naive scores
  out.push_back(problem(1, 12, 64, 77, 77, true));   // CLIP text encoder
  return out;
}

std::vector<Shape> AttentionFamily::shapes(const Problem& prob) const {
  const auto& p = asAttention(prob);
  const int64_t C = p.heads * p.headDim;
  const Shape mask = p.mask ? Shape{p.batch, 1, p.queries, p.keys} : Shape{1, 1, 1, 1};
  return {{p.batch, C, 1, p.queries}, {p.batch, C, 1, p.keys}, {p.batch, C, 1, p.keys}, mask,
          {p.batch, C, 1, p.queries}};
}

std::vector<HostTensor> AttentionFamily::makeInputs(const Problem& prob, std::mt19937_64& rng) const {
  const auto& p = asAttention(prob);
  const auto sh = shapes(prob);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<HostTensor> in;
  for (int i = 0; i < 3; ++i) {
    HostTensor t{sh[static_cast<size_t>(i)], std::vector<float>(static_cast<size_t>(sh[static_cast<size_t>(i)].elements()))};
    for (auto& x : t.data) x = normal(rng);
    in.push_back(std::move(t));
  }
  HostTensor mask{sh[3], std::vector<float>(static_cast<size_t>(sh[3].elements()), 0.0f)};
  if (p.mask) {
    // Each row gets +offset or -offset on top of noise: exp() of these logits without
    // the max subtracted overflows (or underflows to a zero sum) in float.
    std::bernoulli_distribution sign(0.5);
    for (int64_t row = 0; row < p.batch * p.queries; ++row) {
      const float off = sign(rng) ? p.maskOffset : -p.maskOffset;
      for (int64_t l = 0; l < p.keys; ++l) mask.data[static_cast<size_t>(row * p.keys + l)] = off + normal(rng);
    }
  }
  in.push_back(std::move(mask));
  in.push_back({sh[4], {}});
  return in;
}

std::vector<double> AttentionFamily::reference(const Problem& prob, const std::vector<HostTensor>& in) const {
  const auto& p = asAttention(prob);
  AttentionDims d{p.batch, p.heads, p.headDim, p.queries, p.keys};
  return attentionReference(d, p.effectiveScale(), p.causal, in[0].data, in[1].data, in[2].data,
                            p.mask ? in[3].data : std::vector<float>{});
}

Tolerance AttentionFamily::tolerance(DType dtype) const {
  // Each output is a convex combination of V (|v| < ~5). The weights carry the float
  // rounding of the logits: a few ulp of |logit|, and at the +-90 mask offsets
  // ulp(90)/2 = 3.8e-6 absolute, i.e. 3.8e-6 relative in every weight: up to ~2e-5
  // absolute in the output; atol 5e-5, rtol 1e-4, and 2e-5 over the whole output
  // (errors of different weights mostly cancel). f16 storage rounds the inputs
  // (before the reference) and the outputs to 2^-11 relative: 1e-3.
  if (dtype == DType::F32) return {5e-5, 1e-4, 2e-5};
  return {2e-3, 2e-3, 1e-3};
}

Tolerance AttentionFamily::tolerance(const VariantDef& v, DType dtype) const {
  if (v.name == kCoopMatVariant) return coopMatTolerance();
  if (!computesInHalf(v)) return tolerance(dtype);
  // flash_f16 (u = 2^-11): q (pre-scaled by scale log2 e), K and V rounded to half; a
  // score's D/4 products per lane summed in half (~u sqrt(D/4) of a lane's partial, in
  // log2 units: a relative error of ln 2 times that in the key's weight); the weights
  // rounded to half for P V, each chunk of KC keys' P V summed in half, in f32 across
  // chunks; max, sum and rescaling in f32. Emulated (scripts/half-arithmetic-sim.py,
  // "flash_f16": q, k, v ~ N(0, 1) as makeInputs draws them, KC = 16): D = 8 to 160,
  // L = 37 to 4096: at most 1.2e-3 absolute, relL2 <= 1.5e-3, not growing with L (the
  // chunk sums); D = 512 (all 128 slices chained in half: the wide kernel's chains are
  // HSL <= 16 slices, so this is pessimistic) 6e-4 and 2.3e-3. f16 storage adds the
  // output's rounding (2^-11 of |out| < ~3). Measured on lavapipe (its half may be
  // carried out wider): at most 3.0e-3 absolute, relL2 1.0e-3 (every check problem and
  // storage format). atol 1e-2, rtol 1e-2 (GEMM's half margins: 3x lavapipe's largest,
  // 8x the emulation's), relL2 4e-3: far under a dropped key tile or a wrong row
  // statistic (O(0.1) and up).
  return {1e-2, 1e-2, 4e-3};
}

size_t AttentionFamily::minBytes(const Problem& prob, const StorageFormat& f) const {
  const auto& p = asAttention(prob);
  const size_t elem = f.dtype == DType::F32 ? 4 : 2;
  const size_t C = static_cast<size_t>(p.heads * p.headDim), B = static_cast<size_t>(p.batch);
  size_t bytes = elem * B * C * static_cast<size_t>(2 * p.queries + 2 * p.keys);
  if (p.mask) bytes += sizeof(float) * B * static_cast<size_t>(p.queries * p.keys);
  return bytes;
}

double AttentionFamily::minFlops(const Problem& prob) const {
  const auto& p = asAttention(prob);
  double scores = 0;  // scores the mask keeps, per batch and head
  if (p.causal)
    for (int64_t s = 0; s < p.queries; ++s) scores += static_cast<double>(std::min(s + 1, p.keys));
  else
    scores = static_cast<double>(p.queries) * static_cast<double>(p.keys);
  return static_cast<double>(p.batch * p.heads) * scores * (4.0 * static_cast<double>(p.headDim) + 6.0);
}

ProblemPtr AttentionFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  const AttrReader r("attention", attrs, {"heads", "kv", "causal", "mask", "scale"});
  const int64_t heads = r.getInt("heads", 1, 1, 1 << 20), keys = r.getInt("kv", shape.w, 1, int64_t{1} << 30);
  const bool causal = r.getInt("causal", 0, 0, 1) != 0, mask = r.getInt("mask", 0, 0, 1) != 0;
  // Absent: 0, meaning 1/sqrt(D); given, a positive finite number (1e-30 and up).
  const double scale = r.getDouble("scale", 0.0, 1e-30, 1e30);
  if (shape.h != 1) throw Error("attention takes a token tensor [B, H*D, 1, S], got " + shape.text());
  if (heads < 1 || shape.c % heads) throw Error("attention: " + std::to_string(shape.c) +
                                                " channels do not split into heads=" + std::to_string(heads));
  auto p = std::const_pointer_cast<Problem>(problem(shape.n, heads, shape.c / heads, shape.w, keys, causal, mask));
  static_cast<AttentionProblem&>(*p).scale = scale;
  return p;
}

size_t AttentionFamily::scratchBytes(const VariantDef& v, const AttentionProblem& p) {
  if (baseVariantName(v) == "flash" || v.name == kCoopMatVariant) return 0;
  const size_t rows = static_cast<size_t>(p.batch * p.heads * p.queries);
  return rows * static_cast<size_t>(p.keys) * sizeof(float) + rows * 2 * sizeof(float);
}

int AttentionFamily::flashWideParts(int64_t headDim) {
  int parts = 1;
  while ((headDim / 4 + parts - 1) / parts > 16) parts *= 2;
  return parts;
}

std::string AttentionFamily::unsupportedReason(const VariantDef& v, const ParamPoint& pt, const Problem& prob,
                                               const StorageFormat& f, const DeviceCaps& dev) const {
  if (std::string why = Family::unsupportedReason(v, pt, prob, f, dev); !why.empty()) return why;
  const auto& p = asAttention(prob);
  if (p.headDim % 4) return "head size " + std::to_string(p.headDim) + " is not a multiple of 4 (heads are float4 slices)";
  if (v.name == kCoopMatVariant) {
    // O's accumulators stay in registers across the key loop (attention_coopmat.comp):
    // at D = 512 only a DO that splits the head's columns keeps them there.
    if (const int acc = coopMatAccumulators(pt, p.headDim); acc > kCoopMatMaxAccumulators)
      return "flash_coopmat_f16 needs " + std::to_string(acc) + " O accumulators per subgroup at D = " +
             std::to_string(p.headDim) + ", at most " + std::to_string(kCoopMatMaxAccumulators) +
             " (a DO splits the head)";
    // The Q, K, V, S and P tiles in shared memory (attention_coopmat.comp).
    const size_t local = coopMatLocalBytes(pt, p.headDim);
    if (local > dev.localMemBytes)
      return "flash_coopmat_f16 tiles need " + std::to_string(local) + " bytes of shared memory at D = " +
             std::to_string(p.headDim) + ", device has " + std::to_string(dev.localMemBytes);
    return {};
  }
  if (baseVariantName(v) == "flash") {
    const int64_t hs = p.headDim / 4;
    size_t local = 2 * static_cast<size_t>(pt["BK"] * hs) * 16;
    if (hs > kMaxFlashSlices) {
      if (dev.api != "vulkan")
        return "head size " + std::to_string(p.headDim) + " > " + std::to_string(4 * kMaxFlashSlices) +
               ": flash keeps q and the accumulator (2*D floats per row) in registers";
      // Vulkan splits a wide row across invocations; shared memory holds a tile of KC
      // keys (K, then V) and the partial scores (attention_flash_wide.glsl).
      if (flashWideParts(p.headDim) > pt["WG"])
        return "head size " + std::to_string(p.headDim) + " needs " + std::to_string(flashWideParts(p.headDim)) +
               " invocations per row, more than WG";
      local = static_cast<size_t>(pt["KC"] * hs) * 16 + static_cast<size_t>(pt["RQ"] * pt["WG"] * pt["KC"]) * 4;
    }
    if (local > dev.localMemBytes)
      return "K/V tiles need " + std::to_string(local) + " bytes of local memory, device has " +
             std::to_string(dev.localMemBytes);
    return {};
  }
  const size_t scores = static_cast<size_t>(p.batch * p.heads * p.queries * p.keys) * sizeof(float);
  if (scores > dev.maxAllocBytes)
    return "the " + std::to_string(scores >> 20) + " MiB score buffer exceeds the device's largest allocation";
  return {};
}

void AttentionFamily::prebuild(Context& ctx, const VariantDef& v, const ParamPoint& p, const StorageFormat& f) const {
  if (v.name == kCoopMatVariant) throw UnsupportedError(coopMatDeviceRule(p, ctx.device()));  // "no opencl kernels"
  if (baseVariantName(v) != "flash") Family::prebuild(ctx, v, p, f);
}

namespace {

class AttentionOp : public PreparedOp {
 public:
  AttentionOp(Context& ctx, const AttentionFamily& fam, const VariantDef& v, const ParamPoint& pt,
              const AttentionProblem& p, const StorageFormat& f)
      : ctx_(ctx), p_(p), slots_(fam.slots()), flash_(baseVariantName(v) == "flash"), naive_(v.name == "naive") {
    const size_t bh = static_cast<size_t>(p.batch * p.heads), S = static_cast<size_t>(p.queries);
    if (flash_) {
      VariantDef sized = v;  // the head size is a register-array bound: a #define
      sized.defines["HS"] = static_cast<int>(p.headDim / 4);
      kernels_.emplace_back(ctx, fam.buildProgram(ctx, sized, pt, f, 1), "attn_flash");
      const size_t wg = pt["WG"], rows = wg * pt["RQ"];
      // A work-group per RQ*WG query rows of one (batch, head).
      launches_.push_back(Launch::cover(2, {(S + rows - 1) / rows * wg, bh, 1}, {wg, 1, 1}));
      return;
    }
    const ClBuiltProgram program = fam.buildProgram(ctx, v, pt, f, 1);
    for (const char* k : {"attn_scores", "attn_row_softmax", "attn_pv"}) kernels_.emplace_back(ctx, program, k);
    const size_t t = pt["T"], tile = t * pt["R"], swg = pt["SWG"];
    const size_t L = static_cast<size_t>(p.keys), d4 = static_cast<size_t>(p.headDim / 4);
    // T x T work-items per R*T x R*T tile of scores / of outputs; a work-group per score row.
    launches_.push_back(Launch::cover(3, {(L + tile - 1) / tile * t, (S + tile - 1) / tile * t, bh}, {t, t, 1}));
    launches_.push_back(Launch::cover(2, {swg, bh * S, 1}, {swg, 1, 1}));
    launches_.push_back(Launch::cover(3, {(d4 + tile - 1) / tile * t, (S + tile - 1) / tile * t, bh}, {t, t, 1}));
    scratch_.setSizes({bh * S * L * sizeof(float), bh * S * 2 * sizeof(float)});  // scores, row statistics
  }

  std::vector<uint64_t> scratchRegions() const override { return scratch_.sizes(); }
  void bindScratch(const std::vector<BufferRegion>& regions) override { scratch_.bind(regions); }

  OpEvents enqueue(const std::vector<DeviceTensor*>& t) override {
    for (auto& k : kernels_) k.checkLimits();
    KernelArgs args;
    args.slotTensors(slots_, t)
        .i32("H", static_cast<int32_t>(p_.heads))
        .f32("scale", static_cast<float>(p_.effectiveScale()))
        .i32("causal", p_.causal)
        .i32("hasMask", p_.mask);
    if (!flash_) {
      args.region("scores", scratch_.at(ctx_, 0))
          .region("stats", scratch_.at(ctx_, 1))
          .i32("L", static_cast<int32_t>(p_.keys))
          .i32("normalize", naive_)    // the naive variant normalizes rows in place
          .i32("useStats", !naive_);   // the others apply the statistics in attn_pv
    }
    // Each of the three kernels takes some of the arguments they share.
    const KernelArgs shared = args.shared();
    OpEvents events;
    for (size_t i = 0; i < kernels_.size(); ++i) events.push_back(kernels_[i].run(shared, launches_[i]));
    return events;
  }

 private:
  Context& ctx_;
  AttentionProblem p_;
  std::vector<TensorSlot> slots_;
  bool flash_, naive_;
  std::vector<ClBoundKernel> kernels_;
  std::vector<Launch> launches_;
  OpScratch scratch_;
};

}  // namespace

std::unique_ptr<PreparedOp> AttentionFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                     const Problem& prob, const StorageFormat& f) const {
  if (v.name == kCoopMatVariant) throw UnsupportedError(coopMatDeviceRule(p, ctx.device()));  // "no opencl kernels"
  return std::make_unique<AttentionOp>(ctx, *this, v, p, asAttention(prob), f);
}

}  // namespace sdspeed
