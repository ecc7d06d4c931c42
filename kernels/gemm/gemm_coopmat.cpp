// gemm coopmat_f16 (issue #22): the declaration of the tensor-core variant, its device
// rule (which cooperative-matrix shapes the device lists), its shared memory and its
// tolerance. API-neutral: the shader is kernels/gemm/gemm_coopmat.comp, its Vulkan
// lowering gemm_coopmat_vulkan.cpp; OpenCL has no kernel for it (cooperative matrices are
// a Vulkan extension) and says so.
#include <algorithm>
#include <map>
#include <string>

#include "kernels/common/coopmat_rule.h"
#include "kernels/common/half_variant.h"
#include "kernels/gemm/gemm_family.h"

namespace sdspeed {
namespace {

constexpr size_t kMaxLocalBytes = 48 * 1024;  // the H200's maxComputeSharedMemorySize (and OpenCL's limit)
constexpr int kSubgroup = 32;                 // the invocations of one subgroup the shader assumes

int wgOf(const ParamPoint& p) { return p["SGM"] * p["SGN"] * kSubgroup; }

}  // namespace

VariantDef GemmFamily::coopMatVariant() {
  VariantDef c;
  c.name = "coopmat";
  c.params = {
      {"CM", {16}, "cooperative-matrix rows (positions); one of the device's shapes"},
      {"CN", {16, 8}, "cooperative-matrix columns (output channels); one of the device's shapes"},
      {"CK", {16, 8}, "cooperative-matrix reduction depth; one of the device's shapes"},
      {"WM", {2, 1, 4}, "accumulators per subgroup along the positions (warp tile rows)"},
      {"WN", {2, 1, 4}, "accumulators per subgroup along the channels (warp tile columns)"},
      {"SGM", {2, 1, 4}, "subgroups per work-group along the positions"},
      {"SGN", {2, 1, 4}, "subgroups per work-group along the channels"},
      {"KS", {32, 16, 64}, "K per shared-memory step"},
      {"DB", {1, 0}, "double-buffered shared tiles: the next step's global reads overlap this step's products"},
  };
  c.constraints = {
      {"KS % CK == 0 (whole coopmat steps per stage)", [](const ParamPoint& p) { return p["KS"] % p["CK"] == 0; }},
      // The shaders stage whole 8-half chunks of a row's K step (kernels/common/coopmat_tiles.glsl);
      // every KS listed keeps it, a new one must.
      {"KS % 8 == 0 (8-half chunks)", [](const ParamPoint& p) { return p["KS"] % 8 == 0; }},
      // A 16x16 f32 accumulator is 8 registers a lane: 16 of them are 128 of the 255 a
      // thread may hold, what a 64x64 warp tile (WM = WN = 4) takes. The warp tile sets
      // the shared-memory reads per product (WM A and WN B fragments per k step for WM x WN
      // products: 64x64 reads half of 32x32's per product), so 64x64 is in the space; on an
      // H100 it ran slower at every SD 1.5 conv and GEMM tried (conv 2x640x32x32: 606 us
      // against 274 at 32x32 warp tiles; results/vulkan/splitk-flash/): the driver gave it
      // 233 registers (112 at 32x32), too few warps to hide the staging's loads.
      // GEGLU doubles the accumulators (hidden and gate): checked per problem
      // (GemmFamily::unsupportedReason), as its doubled shared tiles are.
      {"WM * WN <= 16 (accumulators per subgroup; GEGLU's doubled ones checked per problem)",
       [](const ParamPoint& p) { return p["WM"] * p["WN"] <= kCoopMatMaxAccumulators; }},
      {"64 <= SGM * SGN * 32 <= 512 (work-group)",
       [](const ParamPoint& p) { return wgOf(p) >= 64 && wgOf(p) <= 512; }},
      // Without GEGLU's doubled w tile: a GEGLU problem's own bytes are checked against the
      // device's limit where the problem is known (GemmFamily::unsupportedReason), so the
      // larger tiles stay in the space of every other GEMM.
      {"shared memory <= 48 KiB", [](const ParamPoint& p) { return coopMatLocalBytes(p, false) <= kMaxLocalBytes; }},
  };
  // Split-K (gemm_coopmat.comp, gemm_coopmat_reduce.comp): SK work-groups per output tile,
  // each over a contiguous range of K steps, then a reduce pass sums their f32 partials and
  // applies the epilogue. 1 (the default) is the single pass. Points with SK beyond the K
  // steps are correct (empty ranges add zeros), only slower.
  c.params.push_back({"SK", {1, 2, 4, 8, 16}, "split-K: work-groups per output tile, each over 1/SK of K, "
                                              "summed by a reduce pass (1: one pass, no scratch)"});
  // Untuned, SK is sized to the problem (coopMatDefaultSplitK).
  c.fitDefaults = [](const ParamPoint& d, const Problem& prob) -> std::map<std::string, int> {
    const auto* g = dynamic_cast<const GemmProblem*>(&prob);
    if (!g) return {};
    return {{"SK", coopMatDefaultSplitK(d, *g)}};
  };
  c.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(wgOf(p)); };
  c.localMemBytes = [](const ParamPoint& p) { return coopMatLocalBytes(p, false); };
  c.deviceRule = [](const ParamPoint& p, const DeviceCaps& dev) { return coopMatDeviceRule(p, dev); };
  // The tensor cores are the fastest GEMM where the device has them: with no tuning-
  // database entry an f16-arithmetic run tries this variant first (defaultOrder), and
  // falls to the next where the device rule refuses it (lavapipe: no cooperative matrices).
  c.defaultRank = 2;
  // Products of f16 values (x and w rounded to f16 once, in shared memory), accumulated
  // in f32; the epilogue in half as direct_f16's. An f16-arithmetic variant, named and
  // declared as the half twins are (requires cl_khr_fp16, i.e. shaderFloat16 on Vulkan):
  // `check --arithmetic f16` runs it, an f32 run never does.
  return halfVariant(c, "tensor cores (VK_NV_cooperative_matrix): f16 products accumulated in f32, SGM x SGN "
                        "subgroups of WM x WN CMxCN accumulators, x and w staged in shared memory as f16");
}

size_t GemmFamily::coopMatLocalBytes(const ParamPoint& p, bool geglu) {
  const size_t pairs = geglu ? 2 : 1, stages = p["DB"] ? 2 : 1;
  const size_t bm = static_cast<size_t>(p["SGM"] * p["WM"] * p["CM"]), bn = static_cast<size_t>(p["SGN"] * p["WN"] * p["CN"]);
  const size_t ks = static_cast<size_t>(p["KS"]);
  // As (BM rows) and Bs (pairs * BN rows) of KS + 8 halves per stage while K is walked,
  // then, over them, the epilogue's f32 C tile (pairs * BN columns of BM + 4 floats) in
  // passes: the fewest of 1, 2, 4 (dividing WN) whose share fits in the staging tiles'
  // bytes. One shared array as kernels/common/coopmat_ctile.glsl declares it for both
  // gemm_coopmat.comp and conv_coopmat.comp (NPASS), its size the larger.
  const size_t tiles = 2 * stages * (bm + pairs * bn) * (ks + 8);
  const size_t whole = 4 * pairs * bn * (bm + 4), wn = static_cast<size_t>(p["WN"]);
  const size_t passes = (whole <= tiles || wn == 1) ? 1 : ((whole <= 2 * tiles || wn == 2) ? 2 : 4);
  return std::max(tiles, whole / passes);
}

int GemmFamily::coopMatSplitK(const ParamPoint& p) { return p.values().count("SK") ? p["SK"] : 1; }

uint64_t GemmFamily::coopMatSplitKBytes(const GemmProblem& g, int splitK) {
  if (splitK <= 1) return 0;
  const uint64_t rows = static_cast<uint64_t>(g.rows);  // GEGLU's hidden and gate rows apart
  return static_cast<uint64_t>(splitK) * static_cast<uint64_t>(g.x.n) * rows * static_cast<uint64_t>(g.x.hw()) *
         sizeof(float);
}

int GemmFamily::coopMatDefaultSplitK(const ParamPoint& p, const GemmProblem& g) {
  // conv coopmat_f16's rule (ConvFamily::coopMatDefaultSplitK) with a lower target and
  // shorter ranges: a GEMM's tiles that do not fill the GPU are SD 1.5's latency-bound ones
  // (the time-embedding GEMVs, 40 K steps of 32 on one position; the 77-token context's K
  // and V, 24 steps), whose K walk is their whole time, so SK doubles while the dispatch has
  // fewer than kSplitKTargetGroups work-groups and each range keeps kSplitKMinSteps steps.
  // Measured on an H100 at the default tiles (results/vulkan/splitk-flash/, median us,
  // SK = 1 / 2 / 4 / 8 / 16): GEMV 2x1280x1x1 (40 tiles) 34.9 / 27.0 / 21.0 / 18.8 / 21.2,
  // the rule's 8; context 2x768x1x77 n = 1280 (80 tiles) 25.0 / 23.8 / 21.3 / 25.1 / 28.0,
  // the rule's 4; 2x1280x1x256 n = 1280 (160 tiles) 37.6 / 35.6 / 39.2 / 41.3 / 55.5, the
  // rule's 2 (a target of 512 gave it 4, slower than no split). Tiles that fill the GPU
  // (the 4096- and 1024-token Linears) stay at SK = 1.
  constexpr int64_t kSplitKTargetGroups = 256, kSplitKMinSteps = 4;
  const int64_t bm = int64_t{p["SGM"]} * p["WM"] * p["CM"], bn = int64_t{p["SGN"]} * p["WN"] * p["CN"];
  const int64_t tiles = (g.x.hw() + bm - 1) / bm * ((g.outChannels() + bn - 1) / bn) * g.x.n;
  return coopMatFitSplitK(tiles, (g.x.c + p["KS"] - 1) / p["KS"], kSplitKTargetGroups, kSplitKMinSteps);
}

int GemmFamily::coopMatFitSplitK(int64_t tiles, int64_t steps, int64_t targetGroups, int64_t minSteps) {
  int sk = 1;
  while (sk < 16 && tiles * sk < targetGroups && steps / (2 * sk) >= minSteps) sk *= 2;
  return sk;
}

std::string GemmFamily::coopMatSplitKReason(uint64_t bytes, const DeviceCaps& dev) {
  // One buffer, indexed by 32-bit uints in the shaders.
  if (bytes > dev.maxAllocBytes)
    return "split-K's " + std::to_string(bytes >> 20) + " MiB of partial sums exceed the device's largest " +
           "allocation (" + std::to_string(dev.maxAllocBytes >> 20) + " MiB)";
  if (bytes / sizeof(float) > UINT32_MAX) return "split-K's partial sums have more than 2^32 elements (32-bit indices)";
  return {};
}

std::string GemmFamily::coopMatDeviceRule(const ParamPoint& p, const DeviceCaps& dev) {
  return coopMatDeviceRule(p, dev, "gemm");
}

std::string GemmFamily::coopMatDeviceRule(const ParamPoint& p, const DeviceCaps& dev, const std::string& family) {
  // The shader's types (gemm_coopmat.comp, and conv_coopmat.comp, which takes this rule):
  // NV, A = B = f16, C = D = f32, subgroup scope (kernels/common/coopmat_rule.cpp, shared
  // with attention's flash_coopmat_f16).
  return coopMatF16DeviceRule(family + " coopmat_f16", "coopmat_f16", static_cast<uint32_t>(p["CM"]),
                              static_cast<uint32_t>(p["CN"]), static_cast<uint32_t>(p["CK"]), dev);
}

Tolerance GemmFamily::coopMatTolerance(DType) {
  // x and w rounded to f16 once (u = 2^-11) and their exact products (11 x 11 bits fit
  // f32's 24) summed in f32: each product is off by <= 2u |x w|, independent signs, so
  // the sum is off by ~u sqrt(sum (x w)^2) ~ u for x ~ N(0, 1), w ~ N(0, 1/K), flat in K
  // (f32's own growth, 2^-24 sqrt(K), is 100x smaller). Emulated
  // (scripts/half-arithmetic-sim.py, "gemm coopmat": products in double, f32 sums per
  // 16-deep step, K = 37 to 5120): the sum rounded to half relL2 3.6e-4, max 2.1e-3;
  // with GELU in half after it relL2 4.9e-4, max 3.5e-3, an atol of 1.2e-3 at rtol
  // 4e-3; flat in K. The other epilogues' half roundings are direct_f16's. f16 storage:
  // x is rounded already (the reference sees it), y to half: u |y| more.
  // atol 1e-2, rtol 8e-3, relL2 3e-3: ~6x the emulated errors (room for a device's half
  // built-ins), still 100x under a lost K tail, a swapped GEGLU half or a wrong edge tile.
  return {1e-2, 8e-3, 3e-3};
}

}  // namespace sdspeed
