#include "kernels/registry.h"
#include "pipeline/model/blocks.h"
#include "pipeline/model/sd_graphs.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {

Graph buildUNetGraph(const UNetConfig& cfg, int64_t batch, int64_t latentH, int64_t latentW, int64_t contextTokens,
                     GraphOptions options) {
  const size_t nb = cfg.blockOut.size();
  const int64_t down = int64_t{1} << (nb - 1);
  if (latentH % down || latentW % down)
    throw Error(cfg.path + ": the latent " + std::to_string(latentH) + "x" + std::to_string(latentW) +
                " must be a multiple of " + std::to_string(down) + " (" + std::to_string(nb - 1) +
                " downsamplings): choose -W/-H a multiple of " + std::to_string(8 * down));
  Graph g("unet");
  GraphBuilder b(g, options);
  const int sample = g.addInput("sample", {batch, cfg.inChannels, latentH, latentW}, true);
  const int timestep = g.addInput("timestep", {batch, 1, 1, 1}, false);
  const int context = g.addInput("encoder_hidden_states", {batch, cfg.crossAttentionDim, 1, contextTokens}, true);
  g.markSteady("encoder_hidden_states");  // the same at every step of an image
  const int64_t c0 = cfg.blockOut[0], tdim = cfg.timeEmbedDim();

  // Timesteps (sinusoidal) -> TimestepEmbedding (linear_1 + SiLU, linear_2); every
  // ResNet projects SiLU(temb).
  auto tp = findFamily("timestep").makeProblem(
      {batch, c0, 1, 1}, {{"flip_sin_to_cos", cfg.flipSinToCos ? "1" : "0"}, {"freq_shift", fmtAttr(cfg.freqShift)}});
  int temb = g.add("timestep", tp, {{"t", timestep}}, "time_proj");
  temb = b.linear(temb, "time_embedding.linear_1", tdim, true, "silu");
  temb = b.linear(temb, "time_embedding.linear_2", tdim, true);
  const int tact = b.activation(temb, "silu", "time_embedding.act");

  auto resnet = [&](int x, const std::string& p, int64_t cout) {
    return resnetBlock(b, x, p, cout, cfg.groups, cfg.normEps, tact);
  };
  auto xformer = [&](int x, const std::string& p, int64_t heads) {
    return transformer2d(b, x, p, heads, cfg.groups, context, cfg.useLinearProjection, cfg.transformerLayers);
  };

  int h = b.conv(sample, "conv_in", c0, 3, 1, 1);
  std::vector<int> skips = {h};
  for (size_t i = 0; i < nb; ++i) {
    const std::string p = "down_blocks." + std::to_string(i);
    const bool attn = cfg.downTypes[i] == "CrossAttnDownBlock2D";
    for (int64_t j = 0; j < cfg.layersPerBlock; ++j) {
      h = resnet(h, p + ".resnets." + std::to_string(j), cfg.blockOut[i]);
      if (attn) h = xformer(h, p + ".attentions." + std::to_string(j), cfg.heads[i]);
      skips.push_back(h);
    }
    if (i + 1 < nb) {
      h = downsample(b, h, p + ".downsamplers.0");
      skips.push_back(h);
    }
  }
  h = resnet(h, "mid_block.resnets.0", cfg.blockOut.back());
  h = xformer(h, "mid_block.attentions.0", cfg.heads.back());
  h = resnet(h, "mid_block.resnets.1", cfg.blockOut.back());
  for (size_t i = 0; i < nb; ++i) {
    const std::string p = "up_blocks." + std::to_string(i);
    const size_t r = nb - 1 - i;  // reversed block index
    const bool attn = cfg.upTypes[i] == "CrossAttnUpBlock2D";
    for (int64_t j = 0; j <= cfg.layersPerBlock; ++j) {
      const int skip = skips.back();
      skips.pop_back();
      h = b.concat(h, skip, p + ".resnets." + std::to_string(j) + ".cat");
      h = resnet(h, p + ".resnets." + std::to_string(j), cfg.blockOut[r]);
      if (attn) h = xformer(h, p + ".attentions." + std::to_string(j), cfg.heads[r]);
    }
    if (i + 1 < nb) h = upsample(b, h, p + ".upsamplers.0");
  }
  h = b.groupNorm(h, "conv_norm_out", cfg.groups, cfg.normEps, true);
  g.markOutput("noise_pred", b.conv(h, "conv_out", cfg.outChannels, 3, 1, 1));
  return g;
}

}  // namespace sdspeed
