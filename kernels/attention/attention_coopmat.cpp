// attention flash_coopmat_f16 (issue #22): FlashAttention with Q K^T and P V on tensor
// cores (VK_NV_cooperative_matrix). Its declaration, device rule, shared memory and
// tolerance; API-neutral. The shader is attention_coopmat.comp, its Vulkan lowering
// attention_coopmat_vulkan.cpp; OpenCL has no kernel for it and says so.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "kernels/attention/attention_family.h"
#include "kernels/common/coopmat_rule.h"
#include "kernels/common/half_variant.h"

namespace sdspeed {
namespace {

constexpr size_t kMaxLocalBytes = 48 * 1024;  // the H200's maxComputeSharedMemorySize
constexpr int kSubgroup = 32;                 // the invocations of one subgroup the shader assumes

int wgOf(const ParamPoint& p) { return p["SG"] * kSubgroup; }

}  // namespace

VariantDef AttentionFamily::coopMatVariant() {
  VariantDef c;
  c.name = "flash_coopmat";
  c.params = {
      {"CM", {16}, "cooperative-matrix rows (query rows); one of the device's shapes"},
      {"CN", {16, 8}, "cooperative-matrix columns (keys of S, head dims of O); one of the device's shapes"},
      {"CK", {16, 8}, "cooperative-matrix reduction depth; one of the device's shapes"},
      {"SG", {4, 2, 1}, "subgroups per work-group, each CM query rows (BR = SG * CM)"},
      {"BC", {32, 64, 16}, "keys per block (one S tile in shared memory)"},
      {"DC", {64, 32, 16}, "head dims per K staging chunk (at most the head's)"},
      {"DO", {0, 64, 128}, "O columns per work-group (0: the whole head; less recomputes Q K^T per split)"},
      {"RT", {8, 0}, "log2 units a key block's max may pass a row's reference before it moves (and O is rescaled)"},
  };
  c.constraints = {
      // attention_coopmat.comp's per-subgroup rescale flags: Rf[4] (a whole 16-byte unit).
      {"SG <= 4 (the shader's per-subgroup flags)", [](const ParamPoint& p) { return p["SG"] <= 4; }},
      {"BC % CN == 0 and BC % CK == 0 (whole coopmat steps over a key block)",
       [](const ParamPoint& p) { return p["BC"] % p["CN"] == 0 && p["BC"] % p["CK"] == 0; }},
      {"DC % CK == 0", [](const ParamPoint& p) { return p["DC"] % p["CK"] == 0; }},
      {"DO % CN == 0", [](const ParamPoint& p) { return p["DO"] % p["CN"] == 0; }},
  };
  c.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(wgOf(p)); };
  // At D = 40 (DO = 0 and the Q tile are D-dependent: unsupportedReason checks the
  // problem's own bytes and O accumulators).
  c.localMemBytes = [](const ParamPoint& p) { return coopMatLocalBytes(p, 40); };
  c.deviceRule = coopMatDeviceRule;
  // Untuned, the defaults fitted to the head (and a point taken from another instance,
  // refitForInstance): where the whole head's O would take more than
  // kCoopMatMaxAccumulators accumulators (D = 512: 32 at CN = 16), DO = 128 splits it. A
  // whole head of 128 or more columns whose tiles exceed 48 KiB is split into 64-column
  // parts first (D = 160, since K and V have buffers of their own: 51984 bytes at 64 rows;
  // three parts of 64, 64 and 32 columns, each recomputing Q K^T; the H100 database's
  // D = 160 entries were DO = 64 at 64 rows, 48 us where 32 rows of the whole head took 71
  // to 74, results/vulkan/flash3/; a narrower head loses more to the recomputation than it
  // gains, so it halves its rows). While the tiles still exceed it (the Q tile is BR x D),
  // half the subgroups of rows at a time (every work-group re-reads all of K and V: keep as
  // many rows as fit), then blocks of 32 keys, then K chunks of 32. Whatever still does not
  // fit is refused by unsupportedReason.
  c.fitDefaults = [](const ParamPoint& d, const Problem& prob) -> std::map<std::string, int> {
    const auto* a = dynamic_cast<const AttentionProblem*>(&prob);
    if (!a) return {};
    std::map<std::string, int> v = d.values(), out;
    auto over = [&] { return coopMatLocalBytes(ParamPoint(v), a->headDim) > kMaxLocalBytes; };
    if (coopMatAccumulators(d, a->headDim) > kCoopMatMaxAccumulators) v["DO"] = out["DO"] = 128;
    if (over() && v["DO"] == 0 && a->headDim >= 128) v["DO"] = out["DO"] = 64;
    while (over() && v["SG"] > 1) v["SG"] = out["SG"] = v["SG"] / 2;
    for (const auto& [name, value] : {std::pair<const char*, int>{"BC", 32}, {"DC", 32}})
      if (over() && v[name] > value) v[name] = out[name] = value;
    return out;
  };
  // Ranked first: untuned, f16 attention runs the tensor cores where the device lists a
  // shape (elsewhere the next half variant, flash_f16). With its staging pipelined through
  // registers (session 40) it beat flash_f16 at every SD 1.5 self-attention on an H100
  // (4096 tokens D = 40: 1034 against 1272 us at flash_f16's defaults, 1060 at its best;
  // D = 80 133 / 283; D = 160 56 / 180; the VAE's D = 512 6982 / 13236) and lost only the
  // 77-key cross-attention (42 / 37 us): results/vulkan/flash2/.
  c.defaultRank = 1;
  return halfVariant(c, "FlashAttention on tensor cores (VK_NV_cooperative_matrix), one pass: O in registers, "
                        "rescaled only when a row's reference max moves (past RT); f16 products accumulated in f32, "
                        "statistics in f32");
}

int AttentionFamily::coopMatColumns(const ParamPoint& p, int64_t headDim) {
  if (p["DO"] != 0) return p["DO"];
  const int cn = p["CN"];
  return static_cast<int>((headDim + cn - 1) / cn * cn);
}

int AttentionFamily::coopMatAccumulators(const ParamPoint& p, int64_t headDim) {
  return coopMatColumns(p, headDim) / p["CN"];
}

size_t AttentionFamily::coopMatLocalBytes(const ParamPoint& p, int64_t headDim) {
  // attention_coopmat.comp's shared arrays: Qs (BR x DQC), Ks (BC x a K chunk), Vs (BC x
  // the V tile), Ps (f16); Ss, the rows' factor, the slices' max, the subgroups' rescale
  // flags (f32 / u32; the flags padded to 16 bytes, attention_coopmat.comp).
  const size_t br = static_cast<size_t>(p["SG"] * p["CM"]), bc = static_cast<size_t>(p["BC"]);
  const size_t ck = static_cast<size_t>(p["CK"]), wgs = static_cast<size_t>(wgOf(p));
  const size_t dqc = (static_cast<size_t>(headDim) + ck - 1) / ck * ck;
  const size_t kch = std::min(static_cast<size_t>(p["DC"]), dqc), doc = static_cast<size_t>(coopMatColumns(p, headDim));
  return 2 * (br * (dqc + 8) + bc * (kch + 8) + bc * (doc + 8) + br * (bc + 8)) + 4 * (br * (bc + 4) + br + wgs + 4);
}

std::string AttentionFamily::coopMatDeviceRule(const ParamPoint& p, const DeviceCaps& dev) {
  if (std::string why = coopMatF16DeviceRule("attention flash_coopmat_f16", "flash_coopmat_f16",
                                             static_cast<uint32_t>(p["CM"]), static_cast<uint32_t>(p["CN"]),
                                             static_cast<uint32_t>(p["CK"]), dev);
      !why.empty())
    return why;
  return {};
}

Tolerance AttentionFamily::coopMatTolerance() {
  // q (pre-scaled by scale log2 e), K, V rounded to half once (u = 2^-11); Q K^T's exact
  // f16 products summed in f32 (no half sums, unlike flash_f16's chains), so a score is
  // off by ~u sqrt(sum (q k)^2) in log2 units: a relative ~u ln 2 |score| in its weight;
  // the weights rounded to half for P V (u relative each, independent), P V exact products
  // summed in f32; max, sum, rescaling and O in f32. Emulated
  // (scripts/half-arithmetic-sim.py, "flash_coopmat_f16"; q, k, v ~ N(0, 1) as makeInputs
  // draws them, BC = 32; D = 8 to 512, L = 37 to 4096): at most 4.0e-4 absolute with f32
  // output, 5.2e-4 with f16 output (its rounding, 2^-11 of |out| < ~3), relL2 <= 4.9e-4,
  // flat in L and D (no half sums) -- under flash_f16's 1.2e-3 / 2.3e-3.
  // atol 4e-3, rtol 4e-3, relL2 2e-3: ~8x the emulated maximum and 4x its relL2 (room for
  // a device's exp2 and f16 conversions), a third of flash_f16's margins since this scheme
  // rounds a subset of what flash_f16 rounds; far under a dropped key block, a wrong row
  // statistic or a missed rescale (O(0.1) and up).
  return {4e-3, 4e-3, 2e-3};
}

}  // namespace sdspeed
