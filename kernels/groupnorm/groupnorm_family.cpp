#include "kernels/groupnorm/groupnorm_family.h"

#include <cmath>
#include <sstream>

#include "kernels/common/half_variant.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

constexpr int kFlagSilu = 1, kFlagResidual = 2;  // GN_SILU, GN_RESIDUAL in groupnorm.cl

const GroupNormProblem& asGroupNorm(const Problem& p) {
  auto* g = dynamic_cast<const GroupNormProblem*>(&p);
  if (!g) throw Error("groupnorm given a problem of another family: " + p.text());
  return *g;
}

VariantDef twoPass() {
  VariantDef v;
  v.name = "two_pass";
  v.summary = "statistics kernel (SPLIT work-groups per group) + per-slice normalize kernel";
  v.params = {
      {"WG", {256, 64, 128, 512, 1024}, "work-group size of the statistics kernel"},
      {"VEC", {4, 1, 2, 8}, "hw positions per vector load in the statistics kernel"},
      {"SPLIT", {8, 1, 2, 4, 16, 32, 64}, "work-groups sharing one group's statistics"},
      {"NWG", {128, 64, 256, 512}, "work-group size of the normalize kernel"},
  };
  v.constraints = {
      // A work-group must have an item for each of the 4 lanes it prepares stats for.
      {"NWG >= 4", [](const ParamPoint& p) { return p["NWG"] >= 4; }},
  };
  v.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(std::max(p["WG"], p["NWG"])); };
  // gn_stats: float2 red[WG]; gn_normalize: 3 x float[4] (OpenCL). Vulkan's
  // groupnorm_two_pass.comp: vec2 red[WG], float stat[2] and vec3 quadStat[4] (<= 64 bytes).
  v.localMemBytes = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]) * 8 + 72; };
  return v;
}

VariantDef onePass() {
  VariantDef v;
  v.name = "one_pass";
  v.summary = "one work-group per (batch, group): statistics and normalization in one kernel";
  v.params = {
      {"WG", {256, 64, 128, 512, 1024}, "work-group size"},
      {"VEC", {4, 1, 2, 8}, "hw positions per vector load"},
      {"CACHE", {8, 0, 1, 2, 4, 10, 16}, "VEC-vectors per item kept in registers (0: re-read x)"},
  };
  v.constraints = {
      // More than 64 cached floats per work-item spills registers on every GPU we target.
      {"VEC * CACHE <= 64", [](const ParamPoint& p) { return p["VEC"] * p["CACHE"] <= 64; }},
  };
  v.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]); };
  v.localMemBytes = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]) * 8; };  // float2 red[WG]
  return v;
}

VariantDef split() {
  VariantDef v;
  v.name = "split";
  v.summary = "SPLIT co-resident work-groups per group exchange statistics inside one kernel";
  v.defines = {{"COOP", 1}};
  v.params = {
      {"WG", {1024, 128, 256, 512}, "work-group size"},
      {"VEC", {4, 1, 2}, "hw positions per vector load"},
      {"SPLIT", {2, 1, 3, 4, 8}, "work-groups per group"},
      {"CACHE", {4, 0, 1, 2, 8}, "VEC-vectors per item kept in registers (0: re-read x)"},
  };
  v.constraints = {
      {"VEC * CACHE <= 64", [](const ParamPoint& p) { return p["VEC"] * p["CACHE"] <= 64; }},
  };
  v.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]); };
  // float2 red[WG], float sums[2 * SPLIT], int arrived.
  v.localMemBytes = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]) * 8 + 8 * p["SPLIT"] + 4; };
  // Work-groups wait for each other, so all of a group's must run at once. CPU
  // runtimes (PoCL) may run work-groups one after another on a thread, so there only
  // SPLIT=1 (no waiting on others) is allowed; it still runs the exchange code in CI.
  v.deviceRule = [](const ParamPoint& p, const DeviceCaps& dev) -> std::string {
    if (p["SPLIT"] > 1 && !dev.isGpu())
      return "SPLIT > 1 needs co-resident work-groups, which only GPUs are assumed to give";
    return {};
  };
  return v;
}

std::string formatEps(double eps) {
  std::ostringstream s;
  s << eps;
  return s.str();
}

class GroupNormOp : public PreparedOp {
 public:
  GroupNormOp(Context& ctx, const GroupNormFamily& fam, const VariantDef& v, const ParamPoint& p,
              const GroupNormProblem& prob, const StorageFormat& f)
      : ctx_(ctx), prob_(prob), point_(p), slots_(fam.slots()), twoPass_(v.name == "two_pass"),
        split_(v.name == "split") {
    const ClBuiltProgram program = fam.buildProgram(ctx, v, p, f, p["VEC"]);
    const Shape& s = prob.dims;
    flags_ = (prob.attrs.silu ? kFlagSilu : 0) | (prob.attrs.residual ? kFlagResidual : 0);
    const size_t groups = static_cast<size_t>(s.n * prob.attrs.groups);
    if (twoPass_) {
      kernels_.emplace_back(ctx, program, "gn_stats");
      kernels_.emplace_back(ctx, program, "gn_normalize");
      const size_t split = p["SPLIT"], wg = p["WG"], nwg = p["NWG"];
      scratch_.setSizes({groups * split * 2 * sizeof(float)});
      // Stats: SPLIT work-groups per (image, group); normalize: one item per pixel of a slice.
      launches_.push_back(Launch::cover(2, {split * wg, groups, 1}, {wg, 1, 1}));
      launches_.push_back(Launch::cover(
          3, {static_cast<size_t>(s.hw()), static_cast<size_t>(s.slices()), static_cast<size_t>(s.n)}, {nwg, 1, 1}));
    } else if (split_) {
      kernels_.emplace_back(ctx, program, "gn_split");
      const size_t wg = p["WG"], parts = p["SPLIT"];
      counters_ = ctx.createBuffer(groups * sizeof(cl_int));
      std::vector<cl_int> zeros(groups, 0);
      ctx.writeBuffer(counters_.get(), zeros.data(), zeros.size() * sizeof(cl_int));
      // The partials are scratch; the counters persist between launches (they count
      // up across calls, see enqueue), so they stay the op's own, 4 bytes a group.
      scratch_.setSizes({groups * parts * 2 * sizeof(float)});
      launches_.push_back(Launch::cover(2, {parts * wg, groups, 1}, {wg, 1, 1}));
    } else {
      kernels_.emplace_back(ctx, program, "gn_one_pass");
      const size_t wg = p["WG"];
      launches_.push_back(Launch::cover(2, {wg, groups, 1}, {wg, 1, 1}));  // a work-group per group
    }
  }

  OpEvents enqueue(const std::vector<DeviceTensor*>& t) override {
    for (auto& k : kernels_) k.checkLimits();  // before split's sequence moves
    KernelArgs args;
    args.slotTensors(slots_, t)
        .i32("G", prob_.attrs.groups)
        .f32("eps", static_cast<float>(prob_.attrs.eps))
        .i32("flags", flags_);
    if (!scratch_.sizes().empty()) args.region("partials", scratch_.at(ctx_, 0));
    if (split_) {
      // The counters grow by SPLIT per launch; wait for this launch's total.
      ++sequence_;
      args.buffer("counters", {counters_.get(), 0}).i32("target", static_cast<int32_t>(sequence_ * point_["SPLIT"]));
    }
    // gn_stats takes only some of the arguments the op's kernels share.
    const KernelArgs shared = args.shared();
    OpEvents events;
    for (size_t i = 0; i < kernels_.size(); ++i) events.push_back(kernels_[i].run(shared, launches_[i]));
    return events;
  }

  std::vector<uint64_t> scratchRegions() const override { return scratch_.sizes(); }
  void bindScratch(const std::vector<BufferRegion>& regions) override { scratch_.bind(regions); }

 private:
  Context& ctx_;
  GroupNormProblem prob_;
  ParamPoint point_;
  std::vector<TensorSlot> slots_;
  bool twoPass_, split_;
  int32_t flags_ = 0;
  int64_t sequence_ = 0;
  std::vector<ClBoundKernel> kernels_;
  ClMem counters_;
  OpScratch scratch_;
  std::vector<Launch> launches_;
};

}  // namespace

std::string GroupNormProblem::text() const {
  std::string t = "groupnorm " + dims.text() + " g=" + std::to_string(attrs.groups) +
                  " eps=" + formatEps(attrs.eps);
  if (attrs.silu) t += " +silu";
  if (attrs.residual) t += " +residual";
  if (inputMean != 0.0f) t += " mean=" + formatEps(inputMean);
  return t;
}

std::map<std::string, std::string> GroupNormProblem::attributes() const {
  return {{"g", std::to_string(attrs.groups)},
          {"eps", formatEps(attrs.eps)},
          {"silu", attrs.silu ? "1" : "0"},
          {"residual", attrs.residual ? "1" : "0"}};
}

ProblemPtr GroupNormFamily::problem(Shape s, int groups, double eps, bool silu, bool residual,
                                    float inputMean) {
  if (groups <= 0 || s.c % groups != 0)
    throw Error("groupnorm: C=" + std::to_string(s.c) + " is not divisible by G=" + std::to_string(groups));
  auto p = std::make_shared<GroupNormProblem>();
  p->dims = s;
  p->attrs = {groups, eps, silu, residual};
  p->inputMean = inputMean;
  return p;
}

namespace {

// two_pass's half twin, ranked first: untuned f16 runs take it where it exists (Vulkan;
// OpenCL refuses it and falls to one_pass_f16). one_pass gives a whole (image, group) to one
// work-group, 32 of them for the VAE's single image, and on an H100 its defaults took 3.0 ms
// at 1x128x512x512 against two_pass_f16's 0.29 ms; it wins only at 8x8 (10.9 against
// 13.4 us) (results/vulkan/gn/README.md). The f32 variants keep their declaration order.
VariantDef twoPassHalf() {
  VariantDef v = halfVariant(twoPass(), "two_pass computing in half after its f32 statistics (Vulkan only)");
  v.defaultRank = 1;
  return v;
}

}  // namespace

GroupNormFamily::GroupNormFamily()
    : variants_{twoPass(), onePass(), split(),
                halfVariant(onePass(), "one_pass computing in half (cl_khr_fp16); statistics in f32"),
                // Vulkan only (groupnorm_two_pass.comp): groupnorm.cl's two_pass has no half
                // body, so OpenCL refuses it (unsupportedReason) rather than run f32 code under
                // a half variant's name.
                twoPassHalf()} {}

std::vector<TensorSlot> GroupNormFamily::slots() const {
  return {{"x", Access::Read, true},
          {"gamma", Access::Read, false},
          {"beta", Access::Read, false},
          {"res", Access::Read, true},
          {"y", Access::Write, true}};
}

std::vector<ProblemPtr> GroupNormFamily::checkProblems(bool full) const {
  std::vector<ProblemPtr> out = {
      // Odd shapes: C not a multiple of 4, H*W not a multiple of any work-group or VEC.
      problem({1, 6, 5, 7}, 3, 1e-5, false, false),
      problem({2, 12, 9, 9}, 12, 1e-5, true, false),     // one channel per group
      problem({1, 10, 3, 11}, 5, 1e-6, true, true),      // C % 4 == 2, fused residual
      problem({1, 32, 16, 16}, 8, 1e-5, false, false, 1000.0f),  // large mean: no cancellation
      // Stable Diffusion 1.5 shapes small enough for CI.
      problem({2, 1280, 8, 8}, 32, 1e-5, true, false),
      problem({2, 640, 16, 16}, 32, 1e-5, false, true),
      problem({2, 320, 64, 64}, 32, 1e-5, true, false),
  };
  if (!full) return out;
  // Every other GroupNorm of SD 1.5 at 512x512: UNet (batch 2, eps 1e-5) ...
  const int64_t unet[][2] = {{320, 32}, {640, 32}, {640, 64}, {960, 32}, {960, 64}, {1280, 16},
                             {1280, 32}, {1920, 16}, {1920, 32}, {2560, 8}, {2560, 16}};
  for (auto [c, h] : unet) out.push_back(problem({2, c, h, h}, 32, 1e-5, true, false));
  // ... and the VAE decoder (batch 1, eps 1e-6), up to 512x512.
  const int64_t vae[][2] = {{512, 64}, {512, 128}, {512, 256}, {256, 256}, {256, 512}, {128, 512}};
  for (auto [c, h] : vae) out.push_back(problem({1, c, h, h}, 32, 1e-6, true, false));
  return out;
}

std::vector<Shape> GroupNormFamily::shapes(const Problem& p) const {
  const auto& gp = asGroupNorm(p);
  const Shape& s = gp.dims;
  const Shape vec{1, s.c, 1, 1};
  // Without the fused residual the kernels never read `res`: one element, as conv's
  // unused slots, so a run's zero placeholder for it is 4 bytes, not a feature map.
  return {s, vec, vec, gp.attrs.residual ? s : Shape{1, 1, 1, 1}, s};
}

std::vector<HostTensor> GroupNormFamily::makeInputs(const Problem& p, std::mt19937_64& rng) const {
  const auto& gp = asGroupNorm(p);
  const Shape& s = gp.dims;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  const auto sh = shapes(p);
  std::vector<HostTensor> in = {{s, {}}, {sh[1], {}}, {sh[2], {}}, {sh[3], {}}, {s, {}}};
  // x: per-channel mean in [-2, 2] (+ the problem's offset) and scale in [0.5, 2], so
  // groups differ and a kernel mixing them up is caught.
  in[0].data.resize(static_cast<size_t>(s.elements()));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c) {
      const float mean = gp.inputMean + 4.0f * uni(rng) - 2.0f, scale = 0.5f + 1.5f * uni(rng);
      for (int64_t i = 0; i < s.hw(); ++i)
        in[0].data[static_cast<size_t>((n * s.c + c) * s.hw() + i)] = mean + scale * normal(rng);
    }
  for (int64_t c = 0; c < s.c; ++c) {
    in[1].data.push_back(1.0f + 0.3f * normal(rng));
    in[2].data.push_back(0.5f * normal(rng));
  }
  in[3].data.resize(static_cast<size_t>(sh[3].elements()));
  for (auto& v : in[3].data) v = normal(rng);
  return in;
}

std::vector<double> GroupNormFamily::reference(const Problem& p, const std::vector<HostTensor>& in) const {
  const auto& gp = asGroupNorm(p);
  return groupNormReference(gp.dims, gp.attrs, in[0].data, in[1].data, in[2].data, in[3].data);
}

Tolerance GroupNormFamily::tolerance(DType dtype) const {
  if (dtype == DType::F32) {
    // Outputs are O(1) (normalized, then gamma ~ 1 +- 0.3, beta ~ 0.5). Float sums over
    // up to 1M elements per group leave mean and rstd with relative errors near 1e-5;
    // with |z| up to ~5 that is ~5e-5 absolute. A mean near 1000 is itself rounded to
    // 6e-5. 2e-4 bounds both with margin, and is still 10x under what a wrong eps
    // (x100) or the E[x^2]-E[x]^2 formula at mean 1000 produces.
    return {2e-4, 2e-4, 2e-5};
  }
  // f16 storage: inputs are rounded before the reference sees them, so the error is
  // the output's rounding to half (2^-11 = 4.9e-4 relative) plus float arithmetic.
  return {1e-3, 1e-3, 1e-3};
}

Tolerance GroupNormFamily::tolerance(const VariantDef& v, DType dtype) const {
  if (!computesInHalf(v)) return tolerance(dtype);
  // one_pass_f16 and two_pass_f16: statistics in f32 (their error is the f32 variants', far under half's),
  // so the error does not grow with the group's size; per element about ten half
  // roundings (u = 2^-11 = 4.9e-4) of values up to ~8 (x - K, the affine, SiLU's exp and
  // divide, the residual add), where the affine or the residual can cancel: up to ~10 u
  // |intermediate| absolute, ~u relative typically. Emulated (scripts/half-arithmetic-sim.py,
  // a 40960-element group with SiLU and residual, means 0 and 1000): at rtol 4e-3 an atol
  // of 2.9e-3 is needed, relL2 4.6e-4. 8e-3 / 8e-3 / 2e-3 leave room for a device's
  // half exp being a few ulp worse than correctly rounded.
  return {8e-3, 8e-3, 2e-3};
}

ProblemPtr GroupNormFamily::makeProblem(const Shape& shape,
                                        const std::map<std::string, std::string>& attrs) const {
  int groups = 32;
  double eps = 1e-5;
  bool silu = false, residual = false;
  for (const auto& [k, v] : attrs) {
    try {
      size_t used = 0;
      if (k == "g") groups = std::stoi(v, &used);
      else if (k == "eps") eps = std::stod(v, &used);
      else if (k == "silu") silu = std::stoi(v, &used) != 0;
      else if (k == "residual") residual = std::stoi(v, &used) != 0;
      else throw Error("unknown groupnorm attribute '" + k + "' (known: g, eps, silu, residual)");
      if (used != v.size()) throw std::invalid_argument(v);
    } catch (const std::logic_error&) {
      throw Error("bad value '" + v + "' for groupnorm attribute " + k);
    }
  }
  if (eps <= 0) throw Error("groupnorm eps must be positive");
  return problem(shape, groups, eps, silu, residual);
}

size_t GroupNormFamily::minBytes(const Problem& p, const StorageFormat& f) const {
  const auto& gp = asGroupNorm(p);
  const size_t act = static_cast<size_t>(gp.dims.elements()) * (f.dtype == DType::F32 ? 4 : 2);
  // x read, y written, residual read if fused, gamma and beta read (weight format).
  return act * (gp.attrs.residual ? 3 : 2) + 2 * f.weightElementBytes() * static_cast<size_t>(gp.dims.c);
}

double GroupNormFamily::minFlops(const Problem& p) const {
  const auto& gp = asGroupNorm(p);
  const double perElement = 8.0 + (gp.attrs.silu ? 4.0 : 0.0) + (gp.attrs.residual ? 1.0 : 0.0);
  return perElement * static_cast<double>(gp.dims.elements()) +
         4.0 * static_cast<double>(gp.dims.n) * gp.attrs.groups;
}

std::string GroupNormFamily::unsupportedReason(const VariantDef& v, const ParamPoint& p,
                                               const Problem& prob, const StorageFormat& f,
                                               const DeviceCaps& dev) const {
  if (std::string why = Family::unsupportedReason(v, p, prob, f, dev); !why.empty()) return why;
  if (v.name == "two_pass_f16" && dev.api != "vulkan")
    return "two_pass_f16 has no " + dev.api + " kernels (Vulkan only; two_pass computes in f32 here)";
  if (v.name != "two_pass" && f.storage == Storage::Image2D)
    return v.name + " stores single channels and an image2d texel holds four (use two_pass)";
  if (v.name == "split" && dev.isGpu()) {
    // Every work-group of the launch must be resident at once. Assume a compute unit
    // holds 1024 work-items' worth of work-groups (true of every GPU we target at the
    // register use of this kernel); the bounded spin catches a wrong assumption.
    const auto& gp = asGroupNorm(prob);
    const int64_t wgs = gp.dims.n * gp.attrs.groups * p["SPLIT"];
    const int64_t resident = static_cast<int64_t>(dev.computeUnits) * std::max(1, 1024 / p["WG"]);
    if (wgs > resident)
      return std::to_string(wgs) + " work-groups exceed the " + std::to_string(resident) +
             " this device is assumed to hold at once";
  }
  return {};
}

std::unique_ptr<PreparedOp> GroupNormFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                     const Problem& prob, const StorageFormat& f) const {
  if (v.name == "two_pass_f16") throw UnsupportedError("groupnorm two_pass_f16 has no opencl kernels (Vulkan only)");
  return std::make_unique<GroupNormOp>(ctx, *this, v, p, asGroupNorm(prob), f);
}

}  // namespace sdspeed
