#include "kernels/gemm/gemm_family.h"

#include <cmath>

#include "kernels/common/coopmat_rule.h"
#include "kernels/common/elementwise.h"
#include "kernels/common/half_variant.h"
#include "reference/gemm.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

// The kernel's epi codes; geglu is the GEGLU #define instead.
const GemmProblem& asGemm(const Problem& p) {
  auto* g = dynamic_cast<const GemmProblem*>(&p);
  if (!g) throw Error("gemm given a problem of another family: " + p.text());
  return *g;
}

constexpr size_t kMaxLocalBytes = 48 * 1024;  // NVIDIA's OpenCL limit (H200): every point fits

}  // namespace

std::map<std::string, std::string> GemmProblem::attributes() const {
  return {{"n", std::to_string(rows)},
          {"epilogue", epilogue},
          {"bias", bias ? "1" : "0"},
          {"residual", residual ? "1" : "0"}};
}

std::string GemmProblem::text() const {
  std::string t = "gemm " + x.text();
  for (const auto& [k, v] : attributes()) t += " " + k + "=" + v;
  return t;
}

size_t GemmFamily::tiledLocalBytes(const ParamPoint& p, bool geglu) {
  const size_t kwg = p["KWG"], mwg = p["MWG"], nwg = p["NWG"];
  return sizeof(float) * kwg * (mwg + (p["SB"] ? (geglu ? 2 : 1) * nwg : 0));
}

int GemmFamily::epilogueCode(const std::string& e) {
  static const char* kEpilogues[] = {"none", "gelu", "gelu_tanh", "quick_gelu", "silu", "geglu"};
  for (int i = 0; i < 6; ++i)
    if (e == kEpilogues[i]) return i;
  throw Error("unknown gemm epilogue '" + e + "' (known: none, gelu, gelu_tanh, quick_gelu, silu, geglu)");
}

GemmFamily::GemmFamily() {
  VariantDef t;
  t.name = "tiled";
  // Untuned, tiled runs before direct; its half twin (tiled_f16) inherits the rank, so
  // under --arithmetic f16 the order is coopmat_f16 (rank 2), tiled_f16, direct_f16.
  t.defaultRank = 1;
  t.summary = "MWG x NWG output tile per work-group, MWI x NWI per work-item in registers, K in KWG steps "
              "through local memory";
  t.defines = {{"TILED", 1}};
  t.params = {{"MWG", {64, 32, 128}, "positions (tokens) per work-group tile"},
              {"NWG", {64, 32, 128}, "output channels per work-group tile"},
              {"KWG", {16, 8, 32}, "input channels per local-memory step"},
              {"MWI", {4, 2, 8}, "positions per work-item (register tile rows)"},
              {"NWI", {4, 8}, "output channels per work-item (register tile columns, float4 groups)"},
              {"VEC", {4, 1}, "a work-item's positions in groups of VEC consecutive ones, read as floatVEC"},
              {"SB", {1, 0}, "stage the w tile in local memory (1) or read w from global memory (0)"},
              {"PF", {1, 0}, "prefetch the next step's tiles into registers while this step computes"}};
  auto wg = [](const ParamPoint& p) { return (p["MWG"] / p["MWI"]) * (p["NWG"] / p["NWI"]); };
  t.constraints = {
      {"MWI % VEC == 0", [](const ParamPoint& p) { return p["MWI"] % p["VEC"] == 0; }},
      {"MWI * NWI >= 16 (register blocking)", [](const ParamPoint& p) { return p["MWI"] * p["NWI"] >= 16; }},
      {"MWG / MWI >= 8 (neighbouring work-items cover 8+ positions: coalesced)",
       [](const ParamPoint& p) { return p["MWG"] / p["MWI"] >= 8; }},
      {"64 <= (MWG / MWI) * (NWG / NWI) <= 1024 (work-group)",
       [wg](const ParamPoint& p) { return wg(p) >= 64 && wg(p) <= 1024; }},
      {"4 * KWG * (MWG + 2 * SB * NWG) <= 48 KiB (local memory under GEGLU)",
       [](const ParamPoint& p) { return tiledLocalBytes(p, true) <= kMaxLocalBytes; }},
      {"MWG * KWG / 4 >= work-group (every work-item loads whole float4 of x)",
       [wg](const ParamPoint& p) { return p["MWG"] * p["KWG"] / 4 >= wg(p); }},
      {"SB == 0 || NWG * KWG / 4 >= work-group (every work-item loads whole float4 of w)",
       [wg](const ParamPoint& p) { return !p["SB"] || p["NWG"] * p["KWG"] / 4 >= wg(p); }},
      {"PF == 0 || SB == 1 (prefetch with staged tiles only)", [](const ParamPoint& p) { return !p["PF"] || p["SB"]; }},
  };
  t.workGroupSize = [wg](const ParamPoint& p) { return static_cast<size_t>(wg(p)); };
  t.localMemBytes = [](const ParamPoint& p) { return tiledLocalBytes(p, false); };
  variants_.push_back(t);

  // tiled in half (cl_khr_fp16): half tiles and products, each KWG step's products summed
  // in half (direct_f16's HK = KWG / 4: 2, 4 or 8), those sums in f32 (gemm.cl); the
  // epilogue in half. Its local memory is half of tiled's (the declared bound stays
  // tiled's: safe).
  variants_.push_back(halfVariant(t, "tiled computing in half (cl_khr_fp16): half tiles and products, each KWG "
                                     "step's sum accumulated in f32"));

  VariantDef d;
  d.name = "direct";
  d.summary = "one work-item per (position, 4 output channels), K loop over float4 slices, no local memory";
  d.defines = {{"DIRECT", 1}};
  d.params = {{"WG", {128, 64, 256}, "work-group size (positions)"}};
  d.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]); };
  variants_.push_back(d);

  // direct in half (cl_khr_fp16): products summed in half over HK K-slices, those sums
  // in f32 (gemm.cl says why); the epilogue in half.
  VariantDef dh = halfVariant(d, "direct computing in half4 (cl_khr_fp16): HK K-slices per half sum, "
                                 "their sums accumulated in f32");
  dh.params.push_back({"HK", {4, 1, 8, 16}, "K slices (4 channels each) summed in half before the f32 accumulator"});
  variants_.push_back(dh);

  // For a few positions in all (kMaxGemvPositions, unsupportedReason): the time
  // embedding's Linears (M = B = 2), where direct has ~F/4 work-items each walking all of
  // K and the tiled and coopmat tiles are mostly empty. Ranked first (3) so that an
  // untuned run takes it where it applies; the tuner times it against the others.
  VariantDef gv;
  gv.name = "gemv";
  gv.defaultRank = 3;
  gv.summary = "a work-group per (position, 4 output channels): its work-items split K, partial sums reduced in "
               "local memory; B*H*W <= 8 only";
  gv.defines = {{"GEMV", 1}};
  gv.params = {{"WG", {64, 32, 128, 256},
                "work-items sharing one dot product (each takes K / 4 / WG float4 slices on OpenCL, K / 8 / WG chunks "
                "of 8 on Vulkan)"}};
  gv.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]); };
  // red[WG * PAIRS] float4s; GEGLU doubles it: declared for the larger.
  gv.localMemBytes = [](const ParamPoint& p) { return 2 * 16 * static_cast<size_t>(p["WG"]); };
  variants_.push_back(gv);
  variants_.push_back(halfVariant(gv, "gemv computing in half: each K-slice's 4 products summed in half, those "
                                      "sums in f32"));
  variants_.push_back(coopMatVariant());  // tensor cores, Vulkan only (gemm_coopmat.cpp)
}

ProblemPtr GemmFamily::problem(Shape x, int64_t rows, const std::string& epilogue, bool bias, bool residual) {
  epilogueCode(epilogue);
  if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1) throw Error("gemm needs a positive shape, got " + x.text());
  if (rows < 1) throw Error("gemm needs n >= 1 output features, got " + std::to_string(rows));
  if (epilogue == "geglu" && rows % 2)
    throw Error("gemm epilogue geglu needs an even n (hidden and gate halves), got n=" + std::to_string(rows));
  auto p = std::make_shared<GemmProblem>();
  p->x = x;
  p->rows = rows;
  p->epilogue = epilogue;
  p->bias = bias;
  p->residual = residual;
  return p;
}

std::vector<TensorSlot> GemmFamily::slots() const {
  return {{"x", Access::Read, true},
          {"w", Access::Read, false, false, /*quantizable=*/true},
          {"bias", Access::Read, false},
          {"residual", Access::Read, true},
          {"y", Access::Write, true}};
}

std::vector<ProblemPtr> GemmFamily::checkProblems(bool full) const {
  // Quick (CI): every epilogue once, K, n and positions not multiples of any tile
  // (K % 4 != 0 too: the unaligned weight path and x slices with padding lanes), one
  // image-shaped x (H*W positions); small, since PoCL builds a program per point and
  // format (and a second one for geglu).
  std::vector<ProblemPtr> out = {
      problem({2, 37, 1, 29}, 45, "none"),                      // odd everything
      problem({1, 64, 1, 50}, 64, "gelu", true, true),          // + residual
      problem({1, 100, 1, 77}, 36, "geglu"),                    // F = 18: a pair straddles no slice
      problem({2, 19, 1, 33}, 20, "quick_gelu", false),         // no bias, K < one KWG step
      problem({1, 48, 3, 5}, 24, "silu", true, true),           // image-shaped x, residual
      problem({2, 24, 1, 17}, 12, "gelu_tanh"),
      // HW % 4 == 0 and K % 8 == 0 (every other one has an odd HW): coopmat_f16's
      // 16-byte weight chunks (gemm_coopmat.comp's BVEC) beside NC4HW4's x quads (AVEC).
      problem({2, 40, 4, 20}, 24, "gelu", true, true),
      // A few positions in all (gemv's rule: B*H*W <= 8): GEGLU with an odd K and F (F =
      // 19: a partial output slice, NC4HW4's padding lane), and no bias with a residual
      // over 3 samples of 2 positions with K % 8 == 0 (gemm_gemv.comp's 16-byte weight
      // chunks).
      problem({2, 37, 1, 1}, 38, "geglu"),
      problem({3, 40, 1, 2}, 20, "none", false, true),
  };
  if (!full) return out;
  // SD 1.5 at 512x512, batch 2: the Linear layers of a transformer block at each level
  // (tokens 4096, 1024, 256, 64; channels 320, 640, 1280, 1280): Q/K/V concatenated
  // (no bias), the output projection (+residual), cross-attention K/V from the 77 text
  // tokens (768 -> 2C, no bias), GEGLU (C -> 8C) and the feed-forward output (4C -> C,
  // +residual); proj_in/proj_out are 1x1 convolutions on the 64x64 latent.
  const int64_t levels[][2] = {{4096, 320}, {1024, 640}, {256, 1280}, {64, 1280}};
  for (const auto& l : levels) {
    const int64_t T = l[0], C = l[1];
    out.push_back(problem({2, C, 1, T}, 8 * C, "geglu"));
    out.push_back(problem({2, 4 * C, 1, T}, C, "none", true, true));
    if (T >= 1024) {
      out.push_back(problem({2, C, 1, T}, 3 * C, "none", false));
      out.push_back(problem({2, C, 1, T}, C, "none", true, true));
    }
  }
  out.push_back(problem({2, 768, 1, 77}, 640, "none", false));      // cross-attention K, V at C = 320
  out.push_back(problem({2, 320, 64, 64}, 320, "none"));            // proj_in (1x1 conv)
  // CLIP text encoder (77 tokens, 768 channels, MLP 3072, quick_gelu), both prompts.
  out.push_back(problem({2, 768, 1, 77}, 2304, "none"));            // Q/K/V
  out.push_back(problem({2, 768, 1, 77}, 3072, "quick_gelu"));      // fc1
  out.push_back(problem({2, 3072, 1, 77}, 768, "none", true, true)); // fc2 + residual
  out.push_back(problem({2, 320, 1, 1}, 1280, "silu"));             // time embedding linear_1
  out.push_back(problem({2, 1280, 1, 1}, 1280, "none"));            // linear_2, the resnets' time_emb_proj
  return out;
}

std::vector<Shape> GemmFamily::shapes(const Problem& prob) const {
  const auto& p = asGemm(prob);
  const Shape unused{1, 1, 1, 1};
  return {p.x, {p.rows, p.x.c, 1, 1}, p.bias ? Shape{1, p.rows, 1, 1} : unused, p.residual ? p.outShape() : unused,
          p.outShape()};
}

std::vector<HostTensor> GemmFamily::makeInputs(const Problem& prob, std::mt19937_64& rng) const {
  const auto& p = asGemm(prob);
  const auto sh = shapes(prob);
  // Realistic scales: activations ~ N(0, 1), weights ~ N(0, 1/K) (outputs ~ N(0, 1)),
  // biases and the residual of the same order as the outputs.
  std::normal_distribution<float> unit(0.0f, 1.0f);
  const float wScale = 1.0f / std::sqrt(static_cast<float>(p.x.c));
  std::vector<HostTensor> in;
  for (size_t i = 0; i < 4; ++i) {
    HostTensor t{sh[i], std::vector<float>(static_cast<size_t>(sh[i].elements()))};
    const bool used = i == 0 || i == 1 || (i == 2 && p.bias) || (i == 3 && p.residual);
    for (auto& v : t.data) v = used ? unit(rng) * (i == 1 ? wScale : i == 2 ? 0.5f : 1.0f) : 0.0f;
    in.push_back(std::move(t));
  }
  in.push_back({sh[4], {}});
  return in;
}

std::vector<double> GemmFamily::reference(const Problem& prob, const std::vector<HostTensor>& in) const {
  const auto& p = asGemm(prob);
  return gemmReference(p.x, p.rows, p.epilogue, in[0].data, in[1].data, p.bias ? in[2].data : std::vector<float>{},
                       p.residual ? in[3].data : std::vector<float>{});
}

Tolerance GemmFamily::tolerance(DType dtype) const {
  // A dot product of length K in float: |error| <~ sqrt(K) 2^-24 sum|x w| (rounding
  // errors of the K partial sums as a random walk). With x ~ N(0, 1), w ~ N(0, 1/K):
  // sum|x w| ~ (2/pi) sqrt(K), so the bound is ~ 0.64 K 2^-24: 1.9e-4 at K = 5120 (SD
  // 1.5's largest, the feed-forward output at 8x8/16x16), 4e-6 at the CI sizes (K <=
  // 100); the typical error is ~ 2^-24 sqrt(K / 2), 3e-6 at K = 5120. The epilogues
  // add a few ulp (erf/tanh/exp: <= 16 ulp) of outputs ~ N(0, 1) and GEGLU multiplies
  // two such errors by O(1) factors. atol 2e-4 covers the bound at every K in the
  // sets; rtol 1e-4 the large outputs; relL2 2e-5 (~6x the typical error at the
  // largest K) still catches a lost K tail or a swapped half, both O(1). f16 storage
  // rounds x and the residual before the reference and y to 2^-11 relative: 2e-3.
  if (dtype == DType::F32) return {2e-4, 1e-4, 2e-5};
  return {2e-3, 2e-3, 1e-3};
}

Tolerance GemmFamily::tolerance(const VariantDef& v, DType dtype) const {
  if (v.name == kCoopMatVariant) return coopMatTolerance(dtype);
  if (!computesInHalf(v)) return tolerance(dtype);
  // direct_f16 (u = 2^-11 = 4.9e-4): x and w rounded to half, each product and each
  // partial sum of a chunk of 4 HK products rounded to half, the chunks' sums in f32, so
  // the error is ~u of the output's scale at every K (gemm.cl); all of K in half would
  // grow as u sqrt(K). Emulated (scripts/half-arithmetic-sim.py, x ~ N(0, 1), w ~
  // N(0, 1/K), K = 37 to 5120): for HK <= 16 at most 6.5e-3 absolute, an atol of 4.8e-3
  // at rtol 4e-3, relL2 <= 1.3e-3, flat in K; all of K in half reaches relL2 1.1e-2 and
  // 5.7e-2 absolute at K = 5120. The epilogue adds a few half roundings (bias, the
  // activation's built-in, the residual): 1.5e-2 / 1e-2 / 4e-3, still far under a lost
  // K tail or a swapped GEGLU half (O(1)). tiled_f16 is the same scheme with a chunk of
  // one KWG step (HK = KWG / 4 = 2, 4 or 8: inside the emulated HK <= 16), its tiles
  // rounded to half once as direct_f16's x and w are: the same tolerance. gemv_f16 sums
  // each K-slice's 4 products in half (HK = 1 on OpenCL) or each 8 (HK = 2 on Vulkan),
  // those sums in f32 (a tree over the work-group instead of a loop: the same bound).
  return {1.5e-2, 1e-2, 4e-3};
}

size_t GemmFamily::minBytes(const Problem& prob, const StorageFormat& f) const {
  const auto& p = asGemm(prob);
  const size_t elem = f.dtype == DType::F32 ? 4 : 2;
  const size_t positions = static_cast<size_t>(p.x.n * p.x.hw());
  const size_t out = positions * static_cast<size_t>(p.outChannels());
  size_t bytes = elem * (positions * static_cast<size_t>(p.x.c) + out);  // x, y
  // w: f32/f16, or quantized blocks (rows padded to whole blocks; biases then f16)
  bytes += TensorDesc{{p.rows, p.x.c, 1, 1}, slotFormat(slots()[1], f)}.bytes();
  if (p.bias) bytes += f.weightElementBytes() * static_cast<size_t>(p.rows);
  if (p.residual) bytes += elem * out;
  return bytes;
}

double GemmFamily::minFlops(const Problem& prob) const {
  const auto& p = asGemm(prob);
  const double M = static_cast<double>(p.x.n * p.x.hw()), R = static_cast<double>(p.rows);
  const double outputs = M * static_cast<double>(p.outChannels());
  double flops = 2.0 * M * R * static_cast<double>(p.x.c);
  if (p.bias) flops += M * R;
  const std::string& e = p.epilogue;
  const double act = e == "gelu" ? 5 : e == "gelu_tanh" ? 9 : e == "geglu" ? 6 : e == "none" ? 0 : 4;
  flops += act * outputs;
  if (p.residual) flops += outputs;
  return flops;
}

ProblemPtr GemmFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  const AttrReader r("gemm", attrs, {"n", "epilogue", "bias", "residual"});
  const int64_t rows = r.getInt("n", 0, 1, int64_t{1} << 30);
  const std::string epilogue = attrs.count("epilogue") ? attrs.at("epilogue") : "none";  // problem() checks it
  const bool bias = r.getInt("bias", 1, 0, 1) != 0, residual = r.getInt("residual", 0, 0, 1) != 0;
  if (!attrs.count("n")) throw Error("gemm needs attribute n (the Linear's output features, rows of W)");
  return problem(shape, rows, epilogue, bias, residual);
}

std::string GemmFamily::unsupportedReason(const VariantDef& v, const ParamPoint& pt, const Problem& prob,
                                          const StorageFormat& f, const DeviceCaps& dev) const {
  if (std::string why = Family::unsupportedReason(v, pt, prob, f, dev); !why.empty()) return why;
  const auto& p = asGemm(prob);
  if (baseVariantName(v) == "tiled" && p.epilogue == "geglu") {
    const size_t local = tiledLocalBytes(pt, true);
    if (local > dev.localMemBytes)
      return "GEGLU tiles need " + std::to_string(local) + " bytes of local memory, device has " +
             std::to_string(dev.localMemBytes);
  }
  if (baseVariantName(v) == "gemv" && p.x.n * p.x.hw() > kMaxGemvPositions)
    return "gemv serves at most " + std::to_string(kMaxGemvPositions) + " positions (B*H*W), this problem has " +
           std::to_string(p.x.n * p.x.hw()) + ": the tiled and coopmat variants serve it";
  if (v.name == kCoopMatVariant)
    if (std::string why = coopMatSplitKReason(coopMatSplitKBytes(p, coopMatSplitK(pt)), dev); !why.empty()) return why;
  if (v.name == kCoopMatVariant && p.epilogue == "geglu") {
    // Hidden and gate accumulators: 2 x WM x WN (gemm_coopmat.cpp's register rule).
    if (2 * pt["WM"] * pt["WN"] > kCoopMatMaxAccumulators)
      return "GEGLU doubles the accumulators: 2 x WM x WN = " + std::to_string(2 * pt["WM"] * pt["WN"]) +
             " per subgroup, at most " + std::to_string(kCoopMatMaxAccumulators);
    if (coopMatLocalBytes(pt, true) > dev.localMemBytes)
      return "GEGLU tiles need " + std::to_string(coopMatLocalBytes(pt, true)) + " bytes of shared memory, device has " +
             std::to_string(dev.localMemBytes);
  }
  return {};
}

void GemmFamily::prebuild(Context& ctx, const VariantDef& v, const ParamPoint& p, const StorageFormat& f) const {
  if (v.name == kCoopMatVariant) throw UnsupportedError(coopMatDeviceRule(p, ctx.device()));
  buildProgram(ctx, v, p, f, 1);
}

std::unique_ptr<PreparedOp> GemmFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                const Problem& prob, const StorageFormat& f) const {
  const auto& g = asGemm(prob);
  if (v.name == kCoopMatVariant) throw UnsupportedError(coopMatDeviceRule(p, ctx.device()));  // "no opencl kernels"
  const bool geglu = g.epilogue == "geglu";
  VariantDef def = v;
  if (geglu) def.defines["GEGLU"] = 1;  // only then: other epilogues share prebuild's program
  const ClBuiltProgram program = buildProgram(ctx, def, p, f, 1);
  const size_t B = static_cast<size_t>(g.x.n), T = static_cast<size_t>(g.x.hw());
  const size_t F = static_cast<size_t>(g.outChannels());
  Launch l;
  std::string kernel;
  if (baseVariantName(v) == "tiled") {
    const size_t mwg = p["MWG"], nwg = p["NWG"], mdim = mwg / p["MWI"], ndim = nwg / p["NWI"];
    // One work-group per MWG x NWG output tile.
    l = Launch::cover(3, {(T + mwg - 1) / mwg * mdim, (F + nwg - 1) / nwg * ndim, B}, {mdim, ndim, 1});
    kernel = "gemm_tiled";
  } else if (baseVariantName(v) == "gemv") {
    const size_t wg = p["WG"];
    l = Launch::cover(3, {wg * ((F + 3) / 4), T, B}, {wg, 1, 1});  // a work-group per output slice
    kernel = "gemm_gemv";
  } else {
    const size_t wg = p["WG"];
    l = Launch::cover(3, {T, (F + 3) / 4, B}, {wg, 1, 1});
    kernel = "gemm_direct";
  }
  const int32_t epi = geglu ? 0 : epilogueCode(g.epilogue), hasBias = g.bias, hasResidual = g.residual;
  return std::make_unique<SingleKernelOp>(ctx, slots(), program, kernel, l, [=](KernelArgs& a) {
    a.i32("epi", epi).i32("hasBias", hasBias).i32("hasResidual", hasResidual);
  });
}

}  // namespace sdspeed
