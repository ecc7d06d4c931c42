#include "kernels/conv/conv_family.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "kernels/common/elementwise.h"
#include "kernels/common/half_variant.h"
#include "kernels/gemm/gemm_family.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

constexpr int kFlagBias = 1, kFlagTemb = 2, kFlagResidual = 4;  // CONV_* in conv.cl
constexpr size_t kTransformWg = 64;  // work-group of the pack / im2col / transform kernels

const ConvProblem& asConv(const Problem& p) {
  auto* c = dynamic_cast<const ConvProblem*>(&p);
  if (!c) throw Error("conv given a problem of another family: " + p.text());
  return *c;
}

size_t up4(int64_t x) { return static_cast<size_t>((x + 3) / 4 * 4); }

VariantDef directVariant() {
  VariantDef v;
  v.name = "direct";
  v.summary = "tiled direct convolution: CO channels x PX pixels per work-item, CB input slices of weights in local memory";
  v.defines = {{"DIRECT", 1}};
  v.params = {{"WGX", {16, 8, 32}, "work-group width (output pixel groups of a row)"},
              {"WGY", {4, 1, 8}, "work-group height (output rows)"},
              {"CO", {8, 4, 16}, "output channels per work-item (a multiple of 4)"},
              {"PX", {2, 1, 4}, "output pixels of a row per work-item"},
              {"CB", {2, 1, 4}, "input slices (4 channels) per local-memory weight stage"}};
  v.constraints = {{"WGX * WGY <= 256", [](const ParamPoint& p) { return p["WGX"] * p["WGY"] <= 256; }}};
  v.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WGX"] * p["WGY"]); };
  v.localMemBytes = [](const ParamPoint& p) { return static_cast<size_t>(p["CB"] * 4 * 9 * p["CO"]) * 4; };
  return v;
}

// The GEMM-based variants share conv_gemm's parameters.
VariantDef gemmVariant(const std::string& name, const std::string& define, int wm, const std::string& summary) {
  VariantDef v;
  v.name = name;
  v.summary = summary;
  v.defines = {{define, 1}};
  if (wm) v.defines["WM"] = wm;
  v.params = {{"TM", {64, 32, 128}, "GEMM tile: output channels per work-group"},
              {"TN", {64, 32, 128}, "GEMM tile: positions (or Winograd tiles) per work-group"},
              {"RM", {8, 4}, "register tile: output channels per work-item (float4 groups)"},
              {"RN", {4, 8}, "register tile: positions per work-item (float4 groups)"},
              {"KT", {16, 8, 32}, "reduction depth per local-memory stage"}};
  v.constraints = {{"(TM/RM) * (TN/RN) in [16, 256]", [](const ParamPoint& p) {
                      const int wg = (p["TM"] / p["RM"]) * (p["TN"] / p["RN"]);
                      return wg >= 16 && wg <= 256;
                    }}};
  v.workGroupSize = [](const ParamPoint& p) {
    return std::max(static_cast<size_t>((p["TM"] / p["RM"]) * (p["TN"] / p["RN"])), kTransformWg);
  };
  v.localMemBytes = [](const ParamPoint& p) { return static_cast<size_t>(p["KT"] * (p["TM"] + p["TN"])) * 4; };
  return v;
}

std::string flagText(bool b) { return b ? "1" : "0"; }

}  // namespace

std::string ConvProblem::text() const {
  std::string t = "conv " + shape().text();
  for (const auto& [k, v] : attributes()) t += " " + k + "=" + v;
  return t;
}

std::map<std::string, std::string> ConvProblem::attributes() const {
  return {{"cout", std::to_string(dims.cout)}, {"k", std::to_string(dims.kernel)},
          {"stride", std::to_string(dims.stride)}, {"pad", std::to_string(dims.pad)},
          {"bias", flagText(bias)}, {"temb", flagText(temb)}, {"residual", flagText(residual)}};
}

ConvFamily::ConvFamily() {
  variants_.push_back(directVariant());
  variants_.push_back(gemmVariant("im2col_gemm", "IM2COL", 0,
                                  "im2col of x into a scratch buffer [N][Cin*k*k][Ho*Wo], then a tiled GEMM with the packed weights"));
  variants_.push_back(gemmVariant("conv1x1", "CONV1X1", 0, "1x1 convolution as a tiled GEMM reading x directly (no im2col)"));
  variants_.push_back(gemmVariant("winograd_f2x2_3x3", "WINO", 2,
                                  "Winograd F(2x2,3x3): input transform, GEMM over 16 planes, output transform"));
  variants_.push_back(gemmVariant("winograd_f4x4_3x3", "WINO", 4,
                                  "Winograd F(4x4,3x3): input transform, GEMM over 36 planes, output transform"));
  variants_.push_back(gemmVariant("winograd_f6x6_3x3", "WINO", 6,
                                  "Winograd F(6x6,3x3): input transform, GEMM over 64 planes, output transform"));
  // The implicit GEMM's half twins (cl_khr_fp16): half tiles and products, each KT
  // stage's sum accumulated in f32 (conv.cl, conv_gemm.glsl); the epilogue in f32.
  variants_.push_back(halfVariant(variants_[1], "im2col_gemm computing in half4 (cl_khr_fp16): each KT stage's "
                                                "products summed in half, those sums in f32"));
  variants_.push_back(halfVariant(variants_[2], "conv1x1 computing in half4 (cl_khr_fp16): each KT stage's "
                                                "products summed in half, those sums in f32"));
  variants_.push_back(coopMatVariant());  // tensor cores, Vulkan only (conv_coopmat.cpp)
  variants_.push_back(winogradCoopMatVariant());  // its GEMM on tensor cores (conv_winograd_coopmat.cpp)
}

ProblemPtr ConvFamily::problem(Shape x, int64_t cout, int k, int stride, bool bias, bool temb, bool residual, int pad) {
  if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1) throw Error("conv needs a positive input shape, got " + x.text());
  if (cout < 1) throw Error("conv needs cout >= 1, got " + std::to_string(cout));
  if (k != 1 && k != 3) throw Error("conv supports k=1 or k=3, got k=" + std::to_string(k));
  if (stride != 1 && stride != 2) throw Error("conv supports stride 1 or 2, got " + std::to_string(stride));
  if (pad < 0) pad = k / 2;
  if (pad >= k) throw Error("conv padding must be below k=" + std::to_string(k) + ", got pad=" + std::to_string(pad));
  auto p = std::make_shared<ConvProblem>();
  p->dims = {x.n, x.c, x.h, x.w, cout, k, stride, pad};
  if (p->dims.outHeight() < 1 || p->dims.outWidth() < 1)
    throw Error("conv: input " + x.text() + " is smaller than the k=" + std::to_string(k) + " window");
  p->bias = bias;
  p->temb = temb;
  p->residual = residual;
  return p;
}

std::vector<TensorSlot> ConvFamily::slots() const {
  // weight is quantizable: every variant reads it only through weight_LOAD (the direct
  // kernel while staging to local memory, the others in their pack / Winograd transform
  // kernels), which dequantizes int8/int4 blocks per value (kernels/QUANTIZATION.md).
  return {{"x", Access::Read, true},         {"weight", Access::Read, false, false, /*quantizable=*/true},
          {"bias", Access::Read, false},
          {"temb", Access::Read, true},      {"residual", Access::Read, true}, {"y", Access::Write, true}};
}

std::vector<ProblemPtr> ConvFamily::checkProblems(bool full) const {
  // Quick set (CI, PoCL): small, odd channel counts and sizes, every epilogue, stride 2,
  // a 1x1 and a conv_in/conv_out-like one; Cin 36 spans several KT / CB stages.
  std::vector<ProblemPtr> out = {
      problem({1, 5, 7, 9}, 7, 3, 1, true),                       // odd everything; partial Winograd tiles
      problem({2, 36, 10, 10}, 12, 3, 1, true, true),             // ResNet conv1: + temb
      problem({2, 12, 9, 11}, 8, 3, 1, true, false, true),        // ResNet conv2: + residual
      problem({1, 6, 11, 9}, 5, 3, 2, true),                      // stride-2 downsample, odd sizes
      problem({2, 7, 6, 5}, 9, 1, 1, true, false, true),          // 1x1 shortcut + residual
      problem({1, 4, 13, 13}, 3, 3, 1, false),                    // conv_in/conv_out channel counts, no bias
  };
  if (!full) return out;
  // SD 1.5 UNet at 64x64 latents, batch 2: every distinct convolution.
  auto unet = [&](int64_t cin, int64_t hw, int64_t cout, int k, int stride = 1) {
    out.push_back(problem({2, cin, hw, hw}, cout, k, stride, true));
  };
  unet(4, 64, 320, 3);                        // conv_in
  out.push_back(problem({2, 320, 64, 64}, 320, 3, 1, true, true));        // ResNet conv1 (+temb)
  out.push_back(problem({2, 320, 64, 64}, 320, 3, 1, true, false, true)); // ResNet conv2 (+residual)
  unet(320, 64, 320, 1);                      // proj_in / proj_out
  unet(320, 64, 320, 3, 2);                   // downsample 64 -> 32
  out.push_back(problem({2, 320, 32, 32}, 640, 3, 1, true, true));
  out.push_back(problem({2, 640, 32, 32}, 640, 3, 1, true, false, true));
  unet(320, 32, 640, 1);                      // conv_shortcut
  unet(640, 32, 640, 1);
  unet(640, 32, 640, 3, 2);                   // downsample 32 -> 16
  out.push_back(problem({2, 640, 16, 16}, 1280, 3, 1, true, true));
  out.push_back(problem({2, 1280, 16, 16}, 1280, 3, 1, true, false, true));
  unet(640, 16, 1280, 1);
  unet(1280, 16, 1280, 1);
  unet(1280, 16, 1280, 3, 2);                 // downsample 16 -> 8
  unet(1280, 8, 1280, 3);                     // down / mid ResNets at 8x8
  unet(1280, 8, 1280, 1);
  unet(2560, 8, 1280, 3);                     // up blocks: concatenated skips
  unet(2560, 8, 1280, 1);
  unet(2560, 16, 1280, 3);
  unet(2560, 16, 1280, 1);
  unet(1920, 16, 1280, 3);
  unet(1920, 16, 1280, 1);
  unet(1280, 32, 1280, 3);                    // upsample conv 16 -> 32
  unet(1920, 32, 640, 3);
  unet(1920, 32, 640, 1);
  unet(1280, 32, 640, 3);
  unet(1280, 32, 640, 1);
  unet(960, 32, 640, 3);
  unet(960, 32, 640, 1);
  unet(640, 64, 640, 3);                      // upsample conv 32 -> 64
  unet(960, 64, 320, 3);
  unet(960, 64, 320, 1);
  unet(640, 64, 320, 3);
  unet(640, 64, 320, 1);
  unet(320, 64, 4, 3);                        // conv_out
  // SD 1.5 VAE decoder up to 512x512, batch 1.
  auto vae = [&](int64_t cin, int64_t hw, int64_t cout, int k) {
    out.push_back(problem({1, cin, hw, hw}, cout, k, 1, true));
  };
  vae(4, 64, 4, 1);      // post_quant_conv
  vae(4, 64, 512, 3);    // conv_in
  vae(512, 64, 512, 3);  // mid block and up block 0
  vae(512, 128, 512, 3); // upsample conv and up block 1
  vae(512, 256, 512, 3); // upsample conv
  vae(512, 256, 256, 3);
  vae(512, 256, 256, 1); // conv_shortcut
  vae(256, 256, 256, 3);
  vae(256, 512, 256, 3); // upsample conv
  vae(256, 512, 128, 3);
  vae(256, 512, 128, 1);
  vae(128, 512, 128, 3);
  vae(128, 512, 3, 3);   // conv_out
  return out;
}

std::vector<Shape> ConvFamily::shapes(const Problem& prob) const {
  const auto& p = asConv(prob);
  const Shape one{1, 1, 1, 1}, y = p.outShape();
  return {p.shape(),
          {p.dims.cout, p.dims.cin, p.dims.kernel, p.dims.kernel},
          p.bias ? Shape{1, p.dims.cout, 1, 1} : one,
          p.temb ? Shape{p.dims.batch, p.dims.cout, 1, 1} : one,
          p.residual ? y : one,
          y};
}

std::vector<HostTensor> ConvFamily::makeInputs(const Problem& prob, std::mt19937_64& rng) const {
  const auto& p = asConv(prob);
  const auto sh = shapes(prob);
  const double fanIn = static_cast<double>(p.dims.cin * p.dims.kernel * p.dims.kernel);
  const float sigma[] = {1.0f, static_cast<float>(1.0 / std::sqrt(fanIn)), 0.1f, 1.0f, 1.0f};
  const bool used[] = {true, true, p.bias, p.temb, p.residual};
  std::vector<HostTensor> in;
  for (size_t i = 0; i < 5; ++i) {
    HostTensor t{sh[i], std::vector<float>(static_cast<size_t>(sh[i].elements()), 0.0f)};
    if (used[i]) {
      std::normal_distribution<float> normal(0.0f, sigma[i]);
      for (auto& x : t.data) x = normal(rng);
    }
    in.push_back(std::move(t));
  }
  in.push_back({sh[5], {}});
  return in;
}

std::vector<double> ConvFamily::reference(const Problem& prob, const std::vector<HostTensor>& in) const {
  const auto& p = asConv(prob);
  const std::vector<float> none;
  return convReference(p.dims, in[0].data, in[1].data, p.bias ? in[2].data : none, p.temb ? in[3].data : none,
                       p.residual ? in[4].data : none);
}

Tolerance ConvFamily::tolerance(DType dtype) const {
  // direct, im2col_gemm, conv1x1: fp32 sums of K = Cin*k*k products of order
  // 1/sqrt(fan_in) into outputs of order 1 (plus bias/temb/residual of order 1). The
  // rounding error of such a sum grows like sqrt(K) * 2^-24 * |partial sums|: for the
  // largest SD fan-in (2560*9 = 23040) ~1e-5 relative. Measured on PoCL (f32, rel L2 /
  // max abs): 6.7e-7 / 1.4e-5 at 2x320x64x64 (K = 2880), 1.3e-6 / 2.1e-5 at
  // 2x1280x16x16 (K = 11520). atol 1e-4, rtol 1e-4, rel L2 5e-6 (~4x headroom).
  // f16 storage rounds inputs (before the reference) and the output (2^-11 relative,
  // |y| up to ~5): atol 4e-3, rtol 2e-3, rel L2 1e-3.
  if (dtype == DType::F32) return {1e-4, 1e-4, 5e-6};
  return {4e-3, 2e-3, 1e-3};
}

Tolerance ConvFamily::tolerance(const VariantDef& v, DType dtype) const {
  // winograd_f2x2_coopmat_f16: the same scheme on V and U (conv_winograd_coopmat.cpp:
  // simulated, F(2x2)'s amplification of their f16 rounding leaves it at coopmat's errors).
  if (isCoopMat(v) || isWinogradCoopMat(v)) return coopMatTolerance(dtype);
  // Winograd multiplies by transform entries far from 1 and cancels afterwards: the
  // fp32 rounding of the transformed values is amplified by the output transform's
  // entries, and grows with the tile. Measured on PoCL in f32 (rel L2 / max abs),
  // 2x320x64x64 -> 320 and 2x1280x16x16 -> 1280 (+ residual):
  //   F(2x2,3x3): entries 0, +-1, 1/2; the GEMM sums only Cin terms per plane:
  //               3.9e-7 / 4.1e-6 and 7.6e-7 / 6.8e-6: better than direct; direct's tolerance.
  //   F(4x4,3x3): B^T entries up to 5, A^T up to 8: 2.5e-6 / 6.9e-5 and 4.9e-6 / 1.6e-4.
  //               atol = rtol 1e-3, rel L2 2.5e-5 (5x; fan-in 2560 adds ~sqrt(2)).
  //   F(6x6,3x3): B^T up to 5.25, A^T up to 32, G down to 1/180: 4.7e-6 / 1.2e-4 and
  //               9.0e-6 / 2.0e-4. atol = rtol 2e-3, rel L2 5e-5.
  // In f16 storage the output's rounding (2^-11) still dominates, so the f16
  // tolerance is direct's except for F(6x6), which keeps a little more room.
  if (computesInHalf(v)) {
    // im2col_gemm_f16, conv1x1_f16 (u = 2^-11): x and w rounded to half, products and
    // their sum over one KT stage (8, 16 or 32 products) in half, the stages' sums in f32,
    // then the epilogue in f32: GEMM direct_f16's scheme with 4 HK = KT. Emulated
    // (scripts/half-arithmetic-sim.py, "conv implicit GEMM": x ~ N(0, 1), w ~ N(0,
    // 1/K), K = 27 to 23040, KT = 32): at most ~6e-3 absolute, relL2 ~1.3e-3, flat in K,
    // as for GEMM; f16 storage adds the output's rounding (2^-11 of |y| <~ 5). GEMM's
    // half tolerance: 1.5e-2 / 1e-2 / 4e-3, far under a lost K tail or a wrong tap (O(1)).
    return {1.5e-2, 1e-2, 4e-3};
  }
  const int m = winogradTile(v);
  if (m == 0 || m == 2) return tolerance(dtype);
  if (m == 4) return dtype == DType::F32 ? Tolerance{1e-3, 1e-3, 2.5e-5} : tolerance(dtype);
  return dtype == DType::F32 ? Tolerance{2e-3, 2e-3, 5e-5} : Tolerance{6e-3, 3e-3, 1e-3};
}

ProblemPtr ConvFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  // Ranges here are what a number can mean; problem() checks that the shapes agree.
  const AttrReader r("conv", attrs, {"cout", "k", "stride", "pad", "bias", "temb", "residual"});
  const int64_t cout = r.getInt("cout", shape.c, 1, int64_t{1} << 30);
  const int k = static_cast<int>(r.getInt("k", 3, 1, 1000));
  const int stride = static_cast<int>(r.getInt("stride", 1, 1, 1000));
  const int pad = static_cast<int>(r.getInt("pad", -1, 0, 1000));  // absent: -1, "same" padding
  const bool bias = r.getInt("bias", 1, 0, 1) != 0, temb = r.getInt("temb", 0, 0, 1) != 0,
             residual = r.getInt("residual", 0, 0, 1) != 0;
  return problem(shape, cout, k, stride, bias, temb, residual, pad);
}

size_t ConvFamily::minBytes(const Problem& prob, const StorageFormat& f) const {
  const auto& p = asConv(prob);
  const size_t elem = f.dtype == DType::F32 ? 4 : 2;
  const auto sh = shapes(prob);
  size_t bytes = elem * static_cast<size_t>(sh[0].elements() + sh[5].elements()) +
                 TensorDesc{sh[1], slotFormat(slots()[1], f)}.bytes();  // f32/f16 or int8/int4 blocks
  if (p.bias) bytes += f.weightElementBytes() * static_cast<size_t>(sh[2].elements());
  if (p.temb) bytes += elem * static_cast<size_t>(sh[3].elements());
  if (p.residual) bytes += elem * static_cast<size_t>(sh[4].elements());
  return bytes;
}

double ConvFamily::minFlops(const Problem& prob) const {
  const auto& p = asConv(prob);
  const double outputs = static_cast<double>(p.outShape().elements());
  const double taps = static_cast<double>(p.dims.cin * p.dims.kernel * p.dims.kernel);
  return outputs * (2.0 * taps + (p.bias ? 1 : 0) + (p.temb ? 1 : 0) + (p.residual ? 1 : 0));
}

int ConvFamily::winogradTile(const VariantDef& v) {
  // WINO_TILE: winograd_f2x2_coopmat_f16's, whose WM is a coopmat parameter.
  for (const char* name : {"WM", "WINO_TILE"})
    if (auto it = v.defines.find(name); it != v.defines.end()) return it->second;
  return 0;
}

double ConvFamily::multiplicationsPerOutput(const VariantDef& v, const ConvProblem& p) {
  const int m = winogradTile(v);
  if (m == 0) return static_cast<double>(p.dims.kernel * p.dims.kernel);
  return static_cast<double>((m + 2) * (m + 2)) / static_cast<double>(m * m);
}

namespace {

// Both per-call rules: the most units (output channels, tiles) of unitBytes each that fit
// kPerCallBlockBytes, in whole multiples of the GEMM tile `tile`, at least one tile, at
// most `total`; or the variant define `overrideDefine` (a positive multiple of 4) if it has one.
int64_t blockRule(const VariantDef& v, const char* overrideDefine, int64_t tile, int64_t total, size_t unitBytes) {
  if (auto it = v.defines.find(overrideDefine); it != v.defines.end()) {
    if (it->second < 4 || it->second % 4)
      throw Error(std::string("conv: ") + overrideDefine + " must be a positive multiple of 4, got " +
                  std::to_string(it->second));
    return std::min<int64_t>(it->second, total);
  }
  const int64_t fit = static_cast<int64_t>(ConvFamily::kPerCallBlockBytes / std::max<size_t>(unitBytes, 1)) / tile * tile;
  return std::min(total, std::max(tile, fit));
}

}  // namespace

// The rule: the most output channels whose derived weights fit kPerCallBlockBytes, in
// whole multiples of the GEMM's work-group tile TM (every block but the last then fills
// its work-groups' rows, so blocking adds no GEMM work beyond the last block's padding,
// as one block of CoutP has), at least TM, at most CoutP. Why 16 MiB: SD 1.5's largest
// convolution (Winograd F(2x2) 2560 -> 1280 at 8x8 and 16x16 latents, 160 KiB per output
// channel) then makes 64-channel blocks of 10 MiB (TM 64) instead of 200 MiB at once,
// and at 64x64 latents (960 -> 320, 60 KiB) 256-channel blocks of 15 MiB: smaller than
// those layers' transformed input planes V (120 MiB), so the per-call weights no longer
// decide any convolution's scratch peak, while a block still holds TM-row tiles over
// every plane and tile column (smaller blocks only add launches, each with less
// parallel work). A variant define PER_CALL_CO (a multiple of 4) overrides the rule: the
// harness uses it to make small problems loop over several blocks.
int64_t ConvFamily::perCallBlock(const VariantDef& v, const ParamPoint& pt, int64_t coutP, size_t rowBytes) {
  return blockRule(v, "PER_CALL_CO", pt["TM"], coutP, rowBytes);
}

// Winograd's tiles per block of the per-call planes V and M (tileBytes: both planes'
// bytes per tile), by the same rule in the GEMM's column tile TN: at 64x64 latents the
// whole planes are the largest scratch (F(2x2) 640 -> 640: V and M 80 MiB each), which
// blocking the weights alone leaves. PER_CALL_TILES (a multiple of 4) overrides it.
int64_t ConvFamily::perCallTiles(const VariantDef& v, const ParamPoint& pt, int64_t tilesP, size_t tileBytes) {
  return blockRule(v, "PER_CALL_TILES", pt["TN"], tilesP, tileBytes);
}

ConvScratch ConvFamily::scratch(const VariantDef& v, const ConvProblem& p, const ParamPoint& pt) {
  ConvScratch s;
  const ConvDims& d = p.dims;
  const size_t coutP = up4(d.cout), f = sizeof(float);
  if (isCoopMat(v)) {
    // Gathers on the fly (no im2col, no packed weights); split-K's partial sums (SK > 1)
    // are its only scratch: f32 [SK][N][CoutP][Ho * Wo] (conv_coopmat.comp), CoutP = Cout
    // rounded up to 4 so one size serves both layouts (NCHW leaves the pad rows unwritten).
    const size_t sk = static_cast<size_t>(GemmFamily::coopMatSplitK(pt));
    if (sk > 1)
      s.output = s.outputBlock =
          sk * static_cast<size_t>(d.batch) * coutP * static_cast<size_t>(d.outHeight() * d.outWidth()) * f;
    // Tap-major K (conv_coopmat.comp's TAPS): the derived f16 weight rows, Cout x K halves
    // (K % 8 == 0: whole 16-byte chunks), made and kept per weight tensor, or per call
    // into one region of that size (one block of every channel: no per-call blocking).
    // (The Vulkan op derives none under SDSPEED_VK_CONV_CHANNEL_MAJOR=1, its A/B switch:
    // the executor and `check` count the op's own derivedWeightBytes.)
    if (coopMatTapMajor(d)) {
      s.weights = s.weightsBlock = static_cast<size_t>(d.cout * d.cin * d.kernel * d.kernel) * 2;
      s.blockChannels = d.cout;
    }
    return s;
  }
  if (baseVariantName(v) == "direct") return s;
  if (isWinogradCoopMat(v)) {
    // U as f16 rows [16][CoutP][Cin] (resident, or per call in blocks of output channels),
    // V [16][Cin][TP] and M [16][CoutP][TP] in f16 or f32 (PF16), per call in blocks of tiles: the rules
    // below with the GEMM's tiles (gemm coopmat_f16's: BN channels, BM tiles).
    const size_t a2 = 16, half = 2, f = pt["PF16"] ? half : sizeof(float);  // the planes' element
    const int64_t bm = int64_t{pt["SGM"]} * pt["WM"] * pt["CM"], bn = int64_t{pt["SGN"]} * pt["WN"] * pt["CN"];
    // Tiles rounded up to 8 (not 4): whole 8-half chunks of a plane's rows for the GEMM's
    // column-major A staging (gemm_coopmat.comp's ACOL).
    const auto up8 = [](int64_t x) { return static_cast<size_t>((x + 7) / 8 * 8); };
    const int64_t tiles = d.batch * ((d.outHeight() + 1) / 2) * ((d.outWidth() + 1) / 2);
    const size_t rowBytes = a2 * static_cast<size_t>(d.cin) * half;
    s.weights = rowBytes * coutP;
    s.input = a2 * static_cast<size_t>(d.cin) * up8(tiles) * f;
    s.output = a2 * coutP * up8(tiles) * f;
    s.blockChannels = blockRule(v, "PER_CALL_CO", bn, static_cast<int64_t>(coutP), rowBytes);
    s.weightsBlock = rowBytes * static_cast<size_t>(s.blockChannels);
    const size_t nb = static_cast<size_t>(s.blockChannels);
    s.blockTiles = blockRule(v, "PER_CALL_TILES", bm, static_cast<int64_t>(up8(tiles)),
                             a2 * (static_cast<size_t>(d.cin) + nb) * f);
    s.inputBlock = a2 * static_cast<size_t>(d.cin) * up8(s.blockTiles) * f;
    s.outputBlock = a2 * nb * up8(s.blockTiles) * f;
    return s;
  }
  size_t rowBytes = 0;  // derived weights per output channel
  int64_t tilesP = 0;   // Winograd's tiles, rounded up to 4
  if (const int m = winogradTile(v)) {
    const size_t a2 = static_cast<size_t>((m + 2) * (m + 2));
    const size_t tiles = static_cast<size_t>(d.batch * ((d.outHeight() + m - 1) / m) * ((d.outWidth() + m - 1) / m));
    tilesP = static_cast<int64_t>(up4(static_cast<int64_t>(tiles)));
    rowBytes = a2 * static_cast<size_t>(d.cin) * f;
    s.input = a2 * static_cast<size_t>(d.cin) * up4(static_cast<int64_t>(tiles)) * f;
    s.output = a2 * coutP * up4(static_cast<int64_t>(tiles)) * f;
  } else {
    const size_t K = static_cast<size_t>(d.cin * d.kernel * d.kernel);
    rowBytes = K * f;
    if (baseVariantName(v) == "im2col_gemm")
      s.input = static_cast<size_t>(d.batch) * K * up4(d.outHeight() * d.outWidth()) * f;
  }
  s.weights = rowBytes * coutP;
  s.blockChannels = perCallBlock(v, pt, static_cast<int64_t>(coutP), rowBytes);
  s.weightsBlock = rowBytes * static_cast<size_t>(s.blockChannels);
  s.inputBlock = s.input;
  s.outputBlock = s.output;
  if (const int m = winogradTile(v)) {
    const size_t a2 = static_cast<size_t>((m + 2) * (m + 2)), nb = static_cast<size_t>(s.blockChannels);
    s.blockTiles = perCallTiles(v, pt, tilesP, a2 * (static_cast<size_t>(d.cin) + nb) * f);
    s.inputBlock = a2 * static_cast<size_t>(d.cin) * up4(s.blockTiles) * f;
    s.outputBlock = a2 * nb * up4(s.blockTiles) * f;
  }
  return s;
}

std::string ConvFamily::unsupportedReason(const VariantDef& v, const ParamPoint& pt, const Problem& prob,
                                          const StorageFormat& f, const DeviceCaps& dev) const {
  if (std::string why = Family::unsupportedReason(v, pt, prob, f, dev); !why.empty()) return why;
  const auto& p = asConv(prob);
  const ConvDims& d = p.dims;
  if (winogradTile(v)) {
    if (d.kernel != 3 || d.stride != 1)
      return "Winograd F(m x m, 3 x 3) needs a 3x3 kernel with stride 1 (got k=" + std::to_string(d.kernel) +
             ", stride " + std::to_string(d.stride) + ")";
    // U's f16 rows are read a 16-byte chunk at a time and made two channels a word.
    if (isWinogradCoopMat(v) && d.cin % 8 != 0)
      return v.name + " needs Cin % 8 == 0 (U's f16 rows in 8-half chunks), got Cin " + std::to_string(d.cin);
  } else if (baseVariantName(v) == "conv1x1") {
    if (d.kernel != 1 || d.stride != 1 || d.pad != 0)
      return "conv1x1 needs a 1x1 kernel, stride 1, no padding (got k=" + std::to_string(d.kernel) + ", stride " +
             std::to_string(d.stride) + ", pad " + std::to_string(d.pad) + ")";
  }
  if (isCoopMat(v)) return GemmFamily::coopMatSplitKReason(scratch(v, p, pt).output, dev);  // split-K's partial sums
  // Vulkan's direct / im2col_gemm / conv1x1 allocate no scratch (conv_vulkan.cpp:
  // im2col_gemm gathers its columns on the fly); its Winograd has OpenCL's buffers, but V
  // and M in one (conv_winograd_vulkan.cpp).
  if (dev.api == "vulkan" && !winogradTile(v)) return {};
  const ConvScratch s = scratch(v, p, pt);
  if (dev.api == "vulkan" && s.input + s.output > dev.maxAllocBytes)
    return "a " + std::to_string((s.input + s.output) >> 20) + " MiB scratch buffer (V and M) exceeds the device's " +
           "largest allocation (" + std::to_string(dev.maxAllocBytes >> 20) + " MiB)";
  for (size_t bytes : {s.weights, s.input, s.output})
    if (bytes > dev.maxAllocBytes)
      return "a " + std::to_string(bytes >> 20) + " MiB scratch buffer exceeds the device's largest allocation (" +
             std::to_string(dev.maxAllocBytes >> 20) + " MiB)";
  if (s.total() > dev.globalMemBytes / 2)
    return std::to_string(s.total() >> 20) + " MiB of scratch exceed half the device memory";
  return {};
}

namespace {

// One prepared convolution. The GEMM-based variants first turn the weights into the
// layout their GEMM reads (packed Wt [Cin*k*k][CoutP], or the Winograd planes U
// [alpha^2][Cin][CoutP]); that runs on the device once per weight buffer and is
// cached (the buffer retained, so it cannot be freed and its handle reused), as the
// network's weights are constant. Its launch is enqueued before the op's kernels but
// its event is not returned: timings cover the per-inference kernels only. Made per
// call instead, the transform runs per block of output channels (ConvScratch), each
// block's GEMM right after it, so the scratch holds one block, not all of Cout.
class ConvOp : public PreparedOp {
 public:
  ConvOp(Context& ctx, const ConvFamily& fam, const VariantDef& v, const ParamPoint& pt, const ConvProblem& p,
         const StorageFormat& f)
      : ctx_(ctx), p_(p), slots_(fam.slots()) {
    const ConvDims& d = p.dims;
    program_ = fam.buildProgram(ctx, v, pt, f, 1);
    flags_ = (p.bias ? kFlagBias : 0) | (p.temb ? kFlagTemb : 0) | (p.residual ? kFlagResidual : 0);
    scratch_ = ConvFamily::scratch(v, p, pt);
    coutP_ = static_cast<cl_int>(up4(d.cout));
    const size_t N = static_cast<size_t>(d.batch), Ho = static_cast<size_t>(d.outHeight()),
                 Wo = static_cast<size_t>(d.outWidth());
    if (baseVariantName(v) == "direct") {
      kind_ = Kind::Direct;
      const size_t wgx = pt["WGX"], wgy = pt["WGY"], px = pt["PX"], co = pt["CO"];
      const size_t coBlocks = (static_cast<size_t>(d.cout) + co - 1) / co;
      add("conv_direct", 3, {(Wo + px - 1) / px, Ho, N * coBlocks}, {wgx, wgy, 1});
      return;
    }
    const size_t wx = pt["TN"] / pt["RN"], wy = pt["TM"] / pt["RM"], tm = pt["TM"], tn = pt["TN"];
    const size_t coutP = static_cast<size_t>(coutP_), cin = static_cast<size_t>(d.cin);
    tm_ = tm;
    wy_ = wy;
    tn_ = tn;
    wx_ = wx;
    auto gemm = [&](size_t cols, size_t batches) {
      gemm_ = launches_.size();
      add("conv_gemm", 3, {(cols + tn - 1) / tn * wx, (coutP + tm - 1) / tm * wy, batches}, {wx, wy, 1});
    };
    if (const int m = ConvFamily::winogradTile(v)) {
      kind_ = Kind::Winograd;
      tilesH_ = static_cast<cl_int>((Ho + m - 1) / m);
      tilesW_ = static_cast<cl_int>((Wo + m - 1) / m);
      tiles_ = static_cast<cl_int>(N) * tilesH_ * tilesW_;
      tilesP_ = static_cast<cl_int>(up4(tiles_));
      prep_ = Launch::cover(2, {coutP, cin, 1}, {kTransformWg, 1, 1});
      prepKernel_ = ClBoundKernel(ctx, program_, "conv_wino_weights");
      add("conv_wino_input", 2, {static_cast<size_t>(tilesP_), cin, 1}, {kTransformWg, 1, 1});
      gemm(static_cast<size_t>(tilesP_), static_cast<size_t>((m + 2) * (m + 2)));
      add("conv_wino_output", 2, {static_cast<size_t>(tiles_), coutP / 4, 1}, {kTransformWg, 1, 1});
      resetScratch();
      return;
    }
    const size_t K = cin * static_cast<size_t>(d.kernel * d.kernel);
    prep_ = Launch::cover(2, {coutP, K, 1}, {kTransformWg, 1, 1});
    prepKernel_ = ClBoundKernel(ctx, program_, "conv_pack_weights");
    if (baseVariantName(v) == "im2col_gemm") {
      kind_ = Kind::Im2col;
      pp_ = static_cast<cl_int>(up4(static_cast<int64_t>(Ho * Wo)));
      add("conv_im2col", 3, {static_cast<size_t>(pp_), K, N}, {kTransformWg, 1, 1});
      gemm(static_cast<size_t>(pp_), N);
    } else {
      kind_ = Kind::Conv1x1;
      gemm(Ho * Wo, N);
    }
    resetScratch();
  }

  // Regions, in order: the input planes (im2col columns or Winograd's V), the output
  // planes (Winograd's M), and, with per-call derived weights, the GEMM's weights.
  std::vector<uint64_t> scratchRegions() const override { return scratchSet_.sizes(); }
  void bindScratch(const std::vector<BufferRegion>& regions) override { scratchSet_.bind(regions); }
  uint64_t derivedWeightBytes() const override { return kind_ == Kind::Direct ? 0 : scratch_.weights; }
  void setDerivedWeightsPerCall(bool perCall) override {
    if (perCall && kind_ == Kind::Direct) throw Error("the direct convolution derives no weights");
    perCallWeights_ = perCall;
    cache_.clear();
    resetScratch();
  }
  bool derivedWeightsPerCall() const override { return perCallWeights_; }

  OpEvents enqueue(const std::vector<DeviceTensor*>& t) override {
    for (auto& k : kernels_) k.checkLimits();
    prepKernel_.checkLimits();
    const ConvDims& d = p_.dims;
    const int32_t H = static_cast<int32_t>(d.height), W = static_cast<int32_t>(d.width),
                  Wo = static_cast<int32_t>(d.outWidth()), K = static_cast<int32_t>(d.kernel),
                  stride = static_cast<int32_t>(d.stride), pad = static_cast<int32_t>(d.pad);
    // Every kernel reads some of the slots' tensors; the scalars are each kernel's own
    // (K is the kernel size to conv_direct and conv_im2col, the reduction to conv_gemm).
    KernelArgs tensors;
    tensors.slotTensors(slots_, t);
    OpEvents events;
    if (kind_ == Kind::Direct) {
      KernelArgs a = tensors;
      a.i32("H", H).i32("W", W).i32("Wo", Wo).i32("K", K).i32("stride", stride).i32("pad", pad).i32("flags", flags_);
      events.push_back(kernels_[0].run(a, launches_[0]));
      return events;
    }
    size_t next = 0;
    if (kind_ == Kind::Winograd) {
      // Per call: per block of output channels (weights transformed once per block),
      // within it per block of tiles (input transform into V, GEMM into M, output
      // transform); one tile block: V made once for every channel block. Resident: one
      // block of each, as the transforms are written for.
      const BufferRegion V = scratchSet_.at(ctx_, 0), M = scratchSet_.at(ctx_, 1);
      const int32_t tileBlock = perCallWeights_ ? static_cast<int32_t>(scratch_.blockTiles) : tilesP_;
      const bool oneTileBlock = tileBlock >= tiles_;
      auto input = [&](int32_t t0, int32_t tb, int32_t tbP) {
        KernelArgs in = tensors;
        in.region("V", V).i32("H", H).i32("W", W).i32("tilesH", tilesH_).i32("tilesW", tilesW_);
        in.i32("T", tb).i32("TP", tbP).i32("pad", pad).i32("t0", t0);
        Launch l = launches_[0];
        l.global[0] = roundUp(static_cast<size_t>(tbP), l.local[0]);
        events.push_back(kernels_[0].run(in, l));
      };
      if (oneTileBlock) input(0, tiles_, tilesP_);
      forEachBlock(*t[1], events, [&](const BufferRegion& weights, int32_t co0, int32_t nb) {
        for (int32_t t0 = 0; t0 < tiles_; t0 += tileBlock) {
          const int32_t tb = oneTileBlock ? tiles_ : std::min(tileBlock, tiles_ - t0);
          const int32_t tbP = oneTileBlock ? tilesP_ : (tb + 3) / 4 * 4;
          if (!oneTileBlock) input(t0, tb, tbP);
          // The batched GEMM: alpha^2 planes M = U V, U [alpha^2][Cin][nb], V [alpha^2][Cin][tbP],
          // M [alpha^2][nb][tbP] (this block's channels).
          KernelArgs g;
          g.region("A", weights).i32("aStride", static_cast<int32_t>(d.cin) * nb).i32("Mp", nb);
          g.i32("K", static_cast<int32_t>(d.cin)).region("B", V).i32("ldb", tbP).region("C", M);
          g.i32("ldc", nb).i32("mOff", 0);
          events.push_back(kernels_[gemm_].run(g, gemmLaunch(nb, tbP)));
          KernelArgs out = tensors;
          out.region("M", M).i32("Wo", Wo).i32("tilesH", tilesH_).i32("tilesW", tilesW_).i32("T", tb);
          out.i32("TP", tbP).i32("CoutP", nb).i32("flags", flags_).i32("t0", t0).i32("s0", co0 / 4);
          Launch l = launches_[gemm_ + 1];
          l.global[0] = roundUp(static_cast<size_t>(tb), l.local[0]);
          l.global[1] = static_cast<size_t>(nb / 4);
          events.push_back(kernels_[gemm_ + 1].run(out, l));
        }
      });
      return events;
    }
    BufferRegion col;
    if (kind_ == Kind::Im2col) {
      col = scratchSet_.at(ctx_, 0);
      KernelArgs a = tensors;
      a.region("col", col).i32("H", H).i32("W", W).i32("Wo", Wo);
      a.i32("HoWo", static_cast<int32_t>(d.outHeight() * d.outWidth())).i32("PP", pp_).i32("K", K);
      a.i32("stride", stride).i32("pad", pad);
      events.push_back(kernels_[next].run(a, launches_[next]));
      ++next;
    }
    const int32_t cols = kind_ == Kind::Im2col ? pp_ : static_cast<int32_t>(d.outHeight() * d.outWidth());
    forEachBlock(*t[1], events, [&](const BufferRegion& weights, int32_t co0, int32_t nb) {
      KernelArgs g = tensors;
      g.region("A", weights).i32("aStride", 0).i32("Mp", nb).i32("mOff", co0);
      g.i32("K", static_cast<int32_t>(d.cin * d.kernel * d.kernel)).i32("flags", flags_);
      if (kind_ == Kind::Im2col) g.region("B", col).i32("ldb", pp_);
      events.push_back(kernels_[gemm_].run(g, gemmLaunch(nb, cols)));
    });
    return events;
  }

 private:
  enum class Kind { Direct, Im2col, Conv1x1, Winograd };

  // A kernel of the op and its grid: `items` work-items per dimension, in work-groups of `local`.
  void add(const char* name, int dims, std::array<size_t, 3> items, std::array<size_t, 3> local) {
    kernels_.emplace_back(ctx_, program_, name);
    launches_.push_back(Launch::cover(dims, {items[0], items[1], items[2]}, {local[0], local[1], local[2]}));
  }

  void resetScratch() {
    std::vector<uint64_t> sizes;
    if (kind_ == Kind::Winograd)
      sizes = perCallWeights_ ? std::vector<uint64_t>{scratch_.inputBlock, scratch_.outputBlock}
                              : std::vector<uint64_t>{scratch_.input, scratch_.output};
    if (kind_ == Kind::Im2col) sizes = {scratch_.input};
    if (perCallWeights_) sizes.push_back(scratch_.weightsBlock);
    scratchSet_.setSizes(std::move(sizes));
  }

  // The GEMM's launch for nb output channels (rows of TM-high tiles) by cols columns.
  Launch gemmLaunch(int32_t nb, int32_t cols) const {
    Launch l = launches_[gemm_];
    l.global[0] = (static_cast<size_t>(cols) + tn_ - 1) / tn_ * wx_;
    l.global[1] = (static_cast<size_t>(nb) + tm_ - 1) / tm_ * wy_;
    return l;
  }

  // Calls gemm(weights, co0, nb) for each block of output channels [co0, co0 + nb) with
  // the block's weights in the GEMM's layout. Per call: blocks of
  // scratch_.blockChannels (the last one partial), each transformed into the last
  // scratch region just before its GEMM (the in-order queue runs the next block's
  // transform after this block's GEMM has read the region). Resident: one block of
  // all CoutP channels from the cache.
  template <typename Gemm>
  void forEachBlock(const DeviceTensor& w, OpEvents& events, Gemm&& gemm) {
    if (!perCallWeights_) {
      gemm(preparedWeights(w), 0, coutP_);
      return;
    }
    const BufferRegion r = scratchSet_.at(ctx_, scratchSet_.sizes().size() - 1);
    const int32_t block = static_cast<int32_t>(scratch_.blockChannels);
    for (int32_t co0 = 0; co0 < coutP_; co0 += block) {
      const int32_t nb = std::min(block, coutP_ - co0);
      transformWeights(w, r, co0, nb, events);  // its time is part of the op's
      gemm(r, co0, nb);
    }
  }

  // Enqueues the transform of output channels [co0, co0 + nb) of w into the GEMM's
  // layout (packing or Winograd's G g G^T), nb channels a row.
  void transformWeights(const DeviceTensor& w, const BufferRegion& out, int32_t co0, int32_t nb,
                        OpEvents& events) {
    KernelArgs a;
    // The output is Winograd's U or the packed Wt, whichever this op's kernel declares.
    a.tensor("weight", w).region(kind_ == Kind::Winograd ? "U" : "Wt", out);
    a.i32("Cout", static_cast<int32_t>(p_.dims.cout)).i32("NB", nb).i32("co0", co0);
    Launch l = prep_;
    l.global[0] = roundUp(static_cast<size_t>(nb), l.local[0]);
    events.push_back(prepKernel_.run(a, l));  // in-order queue: done before the GEMM reads it
  }

  // Resident weights in the GEMM's layout: transformed on the first use of this weight
  // tensor and kept; the key is the tensor's memory, offset and version,
  // so weights rewritten from the host are transformed again, never served stale. Up to
  // kCacheEntries tensors are kept (the timing loop rotates through several copies;
  // a cache smaller than the rotation would time the transform on every call).
  BufferRegion preparedWeights(const DeviceTensor& tensor) {
    const ClTensor& w = asCl(tensor);
    for (const auto& e : cache_)
      if (e.source.get() == w.mem() && e.offset == w.offsetBytes() && e.version == w.version())
        return {e.prepared.get(), 0};
    for (auto it = cache_.begin(); it != cache_.end(); ++it)
      if (it->source.get() == w.mem() && it->offset == w.offsetBytes()) {
        cache_.erase(it);  // the same tensor with new contents
        break;
      }
    if (cache_.size() >= kCacheEntries) cache_.erase(cache_.begin());
    Entry e;
    clCheck(clRetainMemObject(w.mem()), "clRetainMemObject");
    e.source = ClMem(w.mem());
    e.offset = w.offsetBytes();
    e.version = w.version();
    e.prepared = ctx_.createBuffer(scratch_.weights);
    const BufferRegion r{e.prepared.get(), 0};
    OpEvents setup;  // a one-time cost, not part of the op's time
    transformWeights(w, r, 0, coutP_, setup);
    cache_.push_back(std::move(e));
    return r;
  }

  static constexpr size_t kCacheEntries = 64;  // runtime/timing.h rotates up to 64 sets

  struct Entry {
    ClMem source, prepared;
    uint64_t offset = 0, version = 0;
  };

  Context& ctx_;
  ConvProblem p_;
  std::vector<TensorSlot> slots_;
  ClBuiltProgram program_;
  Kind kind_ = Kind::Direct;
  int32_t flags_ = 0, coutP_ = 0, pp_ = 0, tilesH_ = 0, tilesW_ = 0, tiles_ = 0, tilesP_ = 0;
  size_t gemm_ = 0, tm_ = 1, wy_ = 1, tn_ = 1, wx_ = 1;  // the GEMM's index in launches_, its tiles
  ConvScratch scratch_;
  std::vector<ClBoundKernel> kernels_;
  std::vector<Launch> launches_;
  ClBoundKernel prepKernel_;
  Launch prep_;
  OpScratch scratchSet_;
  bool perCallWeights_ = false;
  std::vector<Entry> cache_;
};

}  // namespace

std::unique_ptr<PreparedOp> ConvFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                const Problem& prob, const StorageFormat& f) const {
  if (isCoopMat(v) || isWinogradCoopMat(v))  // "no opencl kernels"
    throw UnsupportedError(GemmFamily::coopMatDeviceRule(p, ctx.device(), "conv"));
  return std::make_unique<ConvOp>(ctx, *this, v, p, asConv(prob), f);
}

}  // namespace sdspeed
