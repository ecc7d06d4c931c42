#include "pipeline/model/blocks.h"
#include "pipeline/model/sd_graphs.h"

namespace sdspeed {

Graph buildVaeDecoderGraph(const VaeConfig& cfg, int64_t batch, int64_t latentH, int64_t latentW,
                           GraphOptions options) {
  Graph g("vae_decoder");
  GraphBuilder b(g, options);
  const size_t nb = cfg.blockOut.size();
  const double eps = 1e-6;  // diffusers' VAE blocks all use resnet_eps 1e-6
  int h = g.addInput("latents", {batch, cfg.latentChannels, latentH, latentW}, true);
  if (cfg.usePostQuantConv) h = b.conv(h, "post_quant_conv", cfg.latentChannels, 1, 1, 0);
  const int64_t top = cfg.blockOut.back();
  h = b.conv(h, "decoder.conv_in", top, 3, 1, 1);
  h = resnetBlock(b, h, "decoder.mid_block.resnets.0", top, cfg.groups, eps, -1);
  if (cfg.midAttention) h = vaeAttention(b, h, "decoder.mid_block.attentions.0", cfg.groups);
  h = resnetBlock(b, h, "decoder.mid_block.resnets.1", top, cfg.groups, eps, -1);
  for (size_t i = 0; i < nb; ++i) {
    const std::string p = "decoder.up_blocks." + std::to_string(i);
    const int64_t out = cfg.blockOut[nb - 1 - i];
    for (int64_t j = 0; j <= cfg.layersPerBlock; ++j)
      h = resnetBlock(b, h, p + ".resnets." + std::to_string(j), out, cfg.groups, eps, -1);
    if (i + 1 < nb) h = upsample(b, h, p + ".upsamplers.0");
  }
  h = b.groupNorm(h, "decoder.conv_norm_out", cfg.groups, eps, true);
  g.markOutput("decoded", b.conv(h, "decoder.conv_out", cfg.outChannels, 3, 1, 1));
  return g;
}

}  // namespace sdspeed
