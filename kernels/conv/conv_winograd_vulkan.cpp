// conv's Winograd variants on Vulkan (winograd_f2x2_3x3, _f4x4_, _f6x6_): conv_winograd.comp,
// one pipeline per stage, chained in one recording as conv_family.cpp's ConvOp chains
// conv.cl's kernels on OpenCL (the recorder's barriers order them like the in-order queue):
//   weights (U = G g G^T) -> input (V = B^T d B) -> GEMM over the alpha^2 planes -> output.
// Same variants, parameters and block rules as OpenCL (ConvFamily::scratch), so the tuner's
// keys and the memory the executor plans are the same:
//  - resident derived weights: U is made on the first enqueue with a weight tensor and
//    kept (VkDerivedWeights: per tensor, keyed by buffer, offset and version); that
//    dispatch's event is dropped, so timings cover only the per-inference dispatches, as
//    on OpenCL;
//  - per call: per block of output channels (U into a scratch region, then the block's
//    GEMMs), within it per block of tiles, each output element computed as with resident
//    weights.
// Scratch: V and M are one region (`planes`, M after V's bytes) so the module binds 8
// buffers, the backend recorder's most; per call the U block is a second region. The
// executor binds regions of its arena; an op nobody binds (check, bench) allocates its own.
// winograd_f2x2_coopmat_f16 (conv_winograd_coopmat.cpp) runs the same stages and blocks,
// but U is made as f16 rows per plane (conv_winograd.comp's UH) and the GEMM is
// gemm_coopmat.comp's tensor-core GEMM: per plane (its samples, grid z) M[xi] = V[xi]^T
// U[xi]^T with K = Cin, the tiles as positions (V read as an NCHW tensor [16][Cin][TP])
// and the block's channels as outputs (M written as one [16][NB][TP]), one U per plane
// (wrows = NB), no epilogue (the output transform applies it); V and M in f16 (PF16 = 1:
// the module conv_winograd_h and gemm_coopmat's f16-storage module) or f32.
#include "kernels/conv/conv_winograd_vulkan.h"

#include <algorithm>
#include <optional>

#include "kernels/gemm/gemm_coopmat_vulkan.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/vulkan/derived_weights.h"
#include "runtime/error.h"

namespace sdspeed {
namespace {

constexpr uint32_t kBindings = 8;         // x, w, bias, temb, residual, y, U, planes
constexpr uint32_t kTransformWg = 64;     // the transforms' work-group (OpenCL's kTransformWg)
enum Stage : uint32_t { kWeights = 0, kInput = 1, kGemm = 2, kOutput = 3 };

// conv_winograd.comp's push constants, in its order.
struct Push {
  uint32_t Cin, H, W, Cout, Ho, Wo, flags, layout, tilesH, tilesW, T, TP, NB, co0, t0, mOff;
};
static_assert(sizeof(Push) == 16 * 4, "conv_winograd.comp pushes 16 words");

uint32_t up4(int64_t x) { return static_cast<uint32_t>((x + 3) / 4 * 4); }
uint32_t up8(int64_t x) { return static_cast<uint32_t>((x + 7) / 8 * 8); }

// winograd_f2x2_coopmat_f16's GEMM stage: gemm_coopmat.comp's pipeline and output tile.
struct CoopMatGemm {
  const vk::ComputePipeline* pipe;
  uint32_t bm, bn;  // tiles (positions) x output channels per work-group
  bool f16Planes;   // PF16: V and M in f16 (and the GEMM stages V column-major: its ACOL)
};

class VkWinogradOp : public PreparedOp {
 public:
  VkWinogradOp(vk::VulkanBackend& be, std::array<const vk::ComputePipeline*, 4> pipes, const Push& base,
               const ConvScratch& s, uint32_t tm, uint32_t tn, uint32_t tiles, uint32_t alpha2,
               std::optional<CoopMatGemm> coop = std::nullopt)
      : be_(be), pipes_(pipes), base_(base), s_(s), tm_(tm), tn_(tn), tiles_(tiles), a2_(alpha2), coop_(coop),
        planeBytes_(coop && coop->f16Planes ? 2 : 4), cache_(be, s.weights) {}

  std::vector<uint64_t> scratchRegions() const override {
    if (perCall_) return {s_.inputBlock + s_.outputBlock, s_.weightsBlock};
    return {s_.input + s_.output};
  }
  void bindScratch(const std::vector<BufferRegion>& regions) override {
    scratch_.bind("conv Winograd", regions, scratchRegions());
  }
  uint64_t derivedWeightBytes() const override { return s_.weights; }
  void setDerivedWeightsPerCall(bool perCall) override {
    perCall_ = perCall;
    cache_.clear();
    scratch_.clear();
  }
  bool derivedWeightsPerCall() const override { return perCall_; }

  OpEvents enqueue(const std::vector<DeviceTensor*>& t) override {
    if (t.size() != 6) throw Error("conv takes 6 tensors, got " + std::to_string(t.size()));
    std::vector<vk::BufferRange> buffers;
    for (DeviceTensor* x : t) buffers.push_back(vk::asVk(*x).range());
    for (size_t i : {1, 2}) vulkanCheckWordBinding(i, *t[i], buffers[i]);  // w and bias are read as uint words
    const auto sizes = scratchRegions();
    auto region = [&](size_t i) { return scratch_.at(be_, sizes, i); };
    buffers.push_back({});  // U (binding 6): the cache's, or the per-call block's
    buffers.push_back(region(0));
    // U before recording: a cache entry dropped here frees a buffer, which runs the batch.
    bool fresh = false;
    buffers[6] = perCall_ ? region(1) : cache_.get(*t[1], fresh);
    auto& rec = be_.recorder();
    rec.begin();
    auto dispatch = [&](Stage st, const Push& p, uint32_t gx, uint32_t gy, uint32_t gz) {
      rec.dispatch(*pipes_[st], buffers, &p, sizeof(Push), gx, gy, gz);
    };
    const uint32_t coutP = base_.NB, tilesP = base_.TP, cin = base_.Cin;
    const uint32_t tileBlock = perCall_ ? static_cast<uint32_t>(s_.blockTiles) : tilesP;
    const bool oneTileBlock = tileBlock >= tiles_;
    Push p = base_;
    p.mOff = static_cast<uint32_t>((perCall_ ? s_.inputBlock : s_.input) / planeBytes_);
    auto input = [&](uint32_t t0, uint32_t tb, uint32_t tbP) {
      p.t0 = t0, p.T = tb, p.TP = tbP;
      dispatch(kInput, p, ceilDiv(tbP, kTransformWg), cin, 1);
    };
    auto weights = [&](uint32_t co0, uint32_t nb) {
      p.co0 = co0, p.NB = nb;
      dispatch(kWeights, p, ceilDiv(nb, kTransformWg), coop_ ? cin / 2 : cin, 1);  // f16 rows: 2 channels a word
    };
    // The tensor-core GEMM of a block (nb channels from the U rows bound, tbP tiles): V and
    // M bound apart (M from mOff: a multiple of 256 bytes), bias and residual unread.
    auto coopGemm = [&](uint32_t nb, uint32_t tbP) {
      const vk::BufferRange planes = buffers[7];
      const uint64_t mBytes = uint64_t{p.mOff} * planeBytes_;
      // (bytes 0: to the buffer's end, as the op's own region is bound.)
      const vk::BufferRange v{planes.buffer, planes.offset, mBytes},
          m{planes.buffer, planes.offset + mBytes, planes.bytes ? planes.bytes - mBytes : 0};
      const std::vector<vk::BufferRange> gb = {v, buffers[6], v, v, m, m};
      const std::array<uint32_t, kGemmCoopMatPushWords> gp = {cin, nb, tbP, 0u, 0u, nb};
      rec.dispatch(*coop_->pipe, gb, gp.data(), sizeof(gp), ceilDiv(tbP, coop_->bm), ceilDiv(nb, coop_->bn), a2_);
    };
    bool dropFirst = false;  // the resident transform's dispatch: a one-time cost, not timed
    uint32_t block = coutP;
    if (perCall_) {
      block = static_cast<uint32_t>(s_.blockChannels);
    } else if (fresh) {  // the new cache entry, transformed before its first use
      weights(0, coutP);
      dropFirst = true;
    }
    if (oneTileBlock) input(0, tiles_, tilesP);
    for (uint32_t co0 = 0; co0 < coutP; co0 += block) {
      const uint32_t nb = std::min(block, coutP - co0);
      if (perCall_) weights(co0, nb);  // into the U block, read by this block's GEMMs
      for (uint32_t t0 = 0; t0 < tiles_; t0 += tileBlock) {
        const uint32_t tb = oneTileBlock ? tiles_ : std::min(tileBlock, tiles_ - t0);
        const uint32_t tbP = oneTileBlock ? tilesP : coop_ ? up8(tb) : up4(tb);  // ConvFamily::scratch's rows
        if (!oneTileBlock) input(t0, tb, tbP);
        p.co0 = co0, p.NB = nb, p.t0 = t0, p.T = tb, p.TP = tbP;
        if (coop_)
          coopGemm(nb, tbP);
        else
          dispatch(kGemm, p, ceilDiv(tbP, tn_), ceilDiv(nb, tm_), a2_);
        dispatch(kOutput, p, ceilDiv(tb, kTransformWg), nb / 4, 1);
      }
    }
    OpEvents events = vk::eventsOf(rec.submit());
    if (dropFirst) events.erase(events.begin());
    return events;
  }

 private:
  vk::VulkanBackend& be_;
  std::array<const vk::ComputePipeline*, 4> pipes_;
  Push base_;  // the problem's constants; NB = CoutP, TP = tiles rounded up to 4 (coop_: 8)
  ConvScratch s_;
  uint32_t tm_, tn_, tiles_, a2_;
  std::optional<CoopMatGemm> coop_;  // winograd_f2x2_coopmat_f16's GEMM stage
  uint32_t planeBytes_ = 4;          // V's and M's elements: f32, or f16 (coop_'s PF16)
  bool perCall_ = false;
  VkDerivedWeights cache_;  // resident U per weight tensor
  VkOpScratch scratch_;  // the planes (and per call the U block): bound, else own
};

std::unique_ptr<PreparedOp> lowerWinogradCoopMat(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                 const ParamPoint& pt, const ConvProblem& c, const StorageFormat& f) {
  const ConvDims& d = c.dims;
  if (d.cin % 8 != 0)  // the family's unsupportedReason says so first
    throw UnsupportedError(v.name + " needs Cin % 8 == 0, got Cin " + std::to_string(d.cin));
  const VulkanCoopMatModule gemm = vulkanCoopMatModule(
      be, "conv", v, "gemm_coopmat", [&] { return GemmFamily::coopMatDeviceRule(pt, be.caps(), "conv"); });
  constexpr uint32_t m = 2, alpha2 = 16;
  const uint32_t Ho = u32(d.outHeight()), Wo = u32(d.outWidth());
  const uint32_t tilesH = ceilDiv(Ho, m), tilesW = ceilDiv(Wo, m), tiles = u32(d.batch) * tilesH * tilesW;
  const uint32_t coutP = up4(d.cout), cin = u32(d.cin);
  auto u = [&](const char* k) { return u32(pt[k]); };
  const uint32_t subgroup = gemm.emulated ? 32u : be.info().subgroupSize;  // 32: the device rule checked it
  const uint32_t bm = u("SGM") * u("WM") * u("CM"), bn = u("SGN") * u("WN") * u("CN");
  const ConvScratch s = ConvFamily::scratch(v, c, pt);
  const std::array<std::array<uint32_t, 3>, 4> grids = {{{ceilDiv(up8(tiles), kTransformWg), cin, 1},
                                                         {ceilDiv(coutP, kTransformWg), cin / 2, 1},
                                                         {ceilDiv(up8(tiles), bm), ceilDiv(coutP, bn), alpha2},
                                                         {ceilDiv(tiles, kTransformWg), coutP / 4, 1}}};
  for (const auto& g : grids) vulkanCheckGroupCount(be, "conv " + v.name, g);
  // The transforms compute in f32 (conv_winograd.comp has no half arithmetic); PF16: the
  // module whose planes are f16.
  const bool f16Planes = pt["PF16"] != 0;
  const auto& module = vulkanModuleFor(f16Planes ? "conv_winograd_h" : "conv_winograd", f.withArithmetic(DType::F32));
  auto transform = [&](Stage st, uint32_t uh) {
    return &be.pipeline(module, kBindings, sizeof(Push),
                        {vulkanLocalSizeX(be, kTransformWg), vk::specU32(1, st), vk::specU32(2, m),
                         vk::specU32(3, u32(d.pad)), vk::specU32(14, uh), vulkanWeightFormat(fam, f)});
  };
  // The GEMM reads V as an NCHW tensor per plane in the planes' type (f16: 8 tiles of one
  // channel a 16-byte chunk, ACOL 1; f32: element loads, tiles fastest, AVEC 0) and U as f16
  // weights in 16-byte chunks (BVEC 1), no pairs, no split.
  const StorageFormat planes =
      StorageFormat::parse(f16Planes ? "f16.buffer.nchw" : "f32.buffer.nchw").withArithmetic(DType::F16);
  // The emulation (tests) of the column-major staging has a module of its own.
  const std::string gemmModule = gemm.emulated && f16Planes ? gemm.name + "_acol" : gemm.name;
  const auto& gemmPipe = gemmCoopMatPipeline(
      be, gemmModule, planes, pt, subgroup,
      {/*pairs=*/1, /*avec=*/0, /*bvec=*/1, vulkanLayoutCode(planes), /*sk=*/1, f16Planes ? 1u : 0u, vk::specU32(20, 1)});
  const std::array<const vk::ComputePipeline*, 4> pipes = {transform(kWeights, 1), transform(kInput, 0), nullptr,
                                                           transform(kOutput, 0)};
  const uint32_t flags = (c.bias ? 1u : 0u) | (c.temb ? 2u : 0u) | (c.residual ? 4u : 0u);
  // V's and M's rows: the tiles rounded up to 8 (ConvFamily::scratch), whole chunks of 8 halves.
  const Push base{cin, u32(d.height), u32(d.width), u32(d.cout), Ho, Wo, flags, vulkanLayoutCode(f), tilesH, tilesW,
                  tiles, up8(tiles), coutP, 0, 0, 0};
  return std::make_unique<VkWinogradOp>(be, pipes, base, s, bn, bm, tiles, alpha2, CoopMatGemm{&gemmPipe, bm, bn, f16Planes});
}

}  // namespace

std::unique_ptr<PreparedOp> lowerConvWinogradVulkan(vk::VulkanBackend& be, const Family& fam, const VariantDef& v,
                                                    const ParamPoint& pt, const ConvProblem& c,
                                                    const StorageFormat& f) {
  const int m = ConvFamily::winogradTile(v);
  const ConvDims& d = c.dims;
  if (d.kernel != 3 || d.stride != 1)  // the family's unsupportedReason says so first
    throw UnsupportedError("Winograd F(m x m, 3 x 3) needs a 3x3 kernel with stride 1");
  if (ConvFamily::isWinogradCoopMat(v)) return lowerWinogradCoopMat(be, fam, v, pt, c, f);
  const uint32_t layout = vulkanLayoutCode(f);
  const uint32_t Ho = u32(d.outHeight()), Wo = u32(d.outWidth()), alpha = u32(m + 2);
  const uint32_t tilesH = ceilDiv(Ho, m), tilesW = ceilDiv(Wo, m), tiles = u32(d.batch) * tilesH * tilesW;
  const uint32_t coutP = up4(d.cout), cin = u32(d.cin);
  const uint32_t tm = u32(pt["TM"]), tn = u32(pt["TN"]), rm = u32(pt["RM"]), rn = u32(pt["RN"]);
  const ConvScratch s = ConvFamily::scratch(v, c, pt);
  // The largest grids (resident: one block of everything) within the device's group counts.
  const std::array<std::array<uint32_t, 3>, 3> grids = {
      {{ceilDiv(up4(tiles), kTransformWg), cin, 1}, {ceilDiv(up4(tiles), tn), ceilDiv(coutP, tm), alpha * alpha},
       {ceilDiv(coutP, kTransformWg), std::max(cin, coutP / 4), 1}}};
  for (const auto& g : grids) vulkanCheckGroupCount(be, "conv " + v.name, g);
  const auto& module = vulkanModuleFor("conv_winograd", f);
  auto pipeline = [&](Stage st, uint32_t wg, std::vector<vk::SpecConstant> more) {
    std::vector<vk::SpecConstant> spec = {vulkanLocalSizeX(be, wg), vk::specU32(1, st), vk::specU32(2, u32(m)),
                                          vk::specU32(3, u32(d.pad))};
    spec.insert(spec.end(), more.begin(), more.end());
    spec.push_back(vulkanWeightFormat(fam, f));
    return &be.pipeline(module, kBindings, sizeof(Push), spec);
  };
  const std::array<const vk::ComputePipeline*, 4> pipes = {
      pipeline(kWeights, kTransformWg, {}), pipeline(kInput, kTransformWg, {}),
      pipeline(kGemm, (tm / rm) * (tn / rn),  // the family's constraint keeps it in [16, 256]
               {vk::specU32(9, tm), vk::specU32(10, tn), vk::specU32(11, rm), vk::specU32(12, rn),
                vk::specU32(13, u32(pt["KT"]))}),
      pipeline(kOutput, kTransformWg, {})};
  const uint32_t flags = (c.bias ? 1u : 0u) | (c.temb ? 2u : 0u) | (c.residual ? 4u : 0u);
  const Push base{cin, u32(d.height), u32(d.width), u32(d.cout), Ho, Wo, flags, layout, tilesH, tilesW,
                  tiles, up4(tiles), coutP, 0, 0, 0};
  return std::make_unique<VkWinogradOp>(be, pipes, base, s, tm, tn, tiles, alpha * alpha);
}

}  // namespace sdspeed
