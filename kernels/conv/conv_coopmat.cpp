// conv coopmat_f16 (issue #22): the implicit GEMM of im2col_gemm / conv1x1 on tensor
// cores (kernels/conv/conv_coopmat.comp). Its tiles, shapes and shared memory are gemm
// coopmat_f16's, so its declaration is GEMM's (parameters, constraints, device rule),
// plus conv's split-K (SK); its tolerance is GEMM's coopmat
// one (same scheme). API-neutral; the Vulkan lowering is conv_coopmat_vulkan.cpp, OpenCL
// has no kernel for it.
#include "kernels/common/half_variant.h"
#include "kernels/conv/conv_family.h"
#include "kernels/gemm/gemm_family.h"

namespace sdspeed {

VariantDef ConvFamily::coopMatVariant() {
  VariantDef c = GemmFamily::coopMatVariant();  // coopmat_f16: f16 arithmetic, cl_khr_fp16 / shaderFloat16
  c.summary = "implicit GEMM on tensor cores (VK_NV_cooperative_matrix): x's im2col columns gathered into "
              "shared memory as f16, w as f16, f16 products accumulated in f32, SGM x SGN subgroups of WM x WN "
              "CMxCN accumulators";
  // GEMM's constraints as they are: they leave GEGLU's doubled tiles and accumulators (conv
  // has no pairs) to GemmFamily::unsupportedReason.
  c.deviceRule = [](const ParamPoint& p, const DeviceCaps& dev) { return GemmFamily::coopMatDeviceRule(p, dev, "conv"); };
  // 64 x 128 tiles by default (SGN = 4 first; GEMM keeps 64 x 64): each K step's A tile (the
  // im2col gather, the costly half) then feeds twice the output channels. On an H100
  // (results/vulkan/tiles2/, median us, 64x64 -> 64x128 at the 32x32 warp tiles) the UNet's
  // residual convolutions went 198 -> 187 (2x320x64x64), 206 -> 177 (2x640x32x32) and
  // 231 -> 206 (2x1280x16x16, SK 2), the VAE's 773 -> 646 (1x128x512x512) and 756 -> 599
  // (1x256x256x256); 128 x 64 and 128 x 128 lost to both at every one of them.
  for (ParamDef& p : c.params)
    if (p.name == "SGN") p.values = {4, 2, 1};
  // Split-K (GEMM's SK parameter, conv's own reduce pass): SD 1.5's small-spatial
  // convolutions (8x8 latents: 64 positions, K = 11520) make a few dozen output tiles, each
  // walking all of K serially; SK work-groups per tile, each over a contiguous range of K
  // steps, then conv_coopmat_reduce.comp sums their f32 partials (scratch:
  // ConvFamily::scratch) and applies the epilogue. 1 (the default) is the single pass.
  // Untuned, SK is sized to the problem (VariantDef::fitDefaults): the smallest that gives
  // the dispatch 512 work-groups of 4 subgroups (fewer of larger ones: coopMatDefaultSplitK),
  // as long as each keeps kSplitKMinSteps K steps. 512 is about four per multiprocessor on
  // an H100/H200 (132) and more than a phone GPU has slots for; a split beyond what fills
  // the device only adds the reduce pass. On the H100 (results/vulkan/warmup/README.md) the 2x1280x8x8 conv (40 tiles
  // of 64x64, 360 steps of 32) took 657 us at SK = 1 and 165 us at SK = 16, the rule's
  // choice; the 64x64-latent convolutions (640 tiles and more) stay at SK = 1.
  c.fitDefaults = [](const ParamPoint& d, const Problem& prob) -> std::map<std::string, int> {
    const auto* cp = dynamic_cast<const ConvProblem*>(&prob);
    if (!cp) return {};
    return {{"SK", coopMatDefaultSplitK(d, cp->dims)}};
  };
  return c;
}

int ConvFamily::coopMatDefaultSplitK(const ParamPoint& p, const ConvDims& d) {
  // The target counts subgroups: 512 work-groups of the 64x64 tiles' 4 (2048 warps, what
  // the rule was measured with), 256 of the 64x128 defaults' 8, so a larger tile, which
  // makes fewer work-groups of more warps each, is not split further for that alone.
  constexpr int64_t kSplitKTargetSubgroups = 2048, kSplitKMinSteps = 16;
  const int64_t bm = int64_t{p["SGM"]} * p["WM"] * p["CM"], bn = int64_t{p["SGN"]} * p["WN"] * p["CN"];
  const int64_t tiles = (d.outHeight() * d.outWidth() + bm - 1) / bm * ((d.cout + bn - 1) / bn) * d.batch;
  const int64_t steps = (d.cin * d.kernel * d.kernel + p["KS"] - 1) / p["KS"];
  const int64_t subgroups = int64_t{p["SGM"]} * p["SGN"];
  return GemmFamily::coopMatFitSplitK(tiles, steps, kSplitKTargetSubgroups / subgroups, kSplitKMinSteps);
}

bool ConvFamily::isCoopMat(const VariantDef& v) { return v.name == kCoopMatVariant; }

// Tap-major K (kernels/conv/conv_coopmat.comp's TAPS) where a chunk of 8 consecutive k can
// be 8 input channels of one tap: Cin % 8 == 0 (every SD 1.5 convolution but the UNet's
// and the VAE's conv_in, Cin 4). Not a tuning parameter: the A chunk is then one pixel's
// channels (two NC4HW4 loads, one bounds check) instead of 8 separate (ci, ky, kx) gathers,
// at the cost of derived f16 weight rows (Cout x K halves per weight tensor, resident by
// default), so every point of the variant takes it where it applies. An H100 measurement
// (results/vulkan/taps/) compares it with the channel-major gather it replaces
// (SDSPEED_VK_CONV_CHANNEL_MAJOR=1).
bool ConvFamily::coopMatTapMajor(const ConvDims& d) { return d.cin % 8 == 0; }

Tolerance ConvFamily::coopMatTolerance(DType dtype) {
  // gemm coopmat_f16's scheme on K = Cin k^2 (27 to 23040 in SD 1.5): x and w rounded to
  // f16 once, their exact products summed in f32, so the error is ~u of the output and flat
  // in K (gemm_coopmat.cpp). The epilogue adds bias, temb and residual in f32: nothing in
  // half after the sum but an f16 store. Emulated (scripts/half-arithmetic-sim.py, "conv
  // coopmat": x ~ N(0, 1), w ~ N(0, 1/K), K = 27, 2880, 23040, an N(0, 1) epilogue term):
  // relL2 2.1e-4 (f32 out) / 2.9e-4 (f16 out), max 1.9e-3 / 2.5e-3, an atol of 1.4e-3 at
  // rtol 4e-3; flat in K. GEMM coopmat's 1e-2 / 8e-3 / 3e-3 (~7x the atol, 10x the relL2,
  // room for a device's accumulation order), still ~100x under a lost K tail, a wrong tap
  // or a shifted window (O(1) errors: a swapped kx/ky fails the emulated test).
  return GemmFamily::coopMatTolerance(dtype);
}

}  // namespace sdspeed
