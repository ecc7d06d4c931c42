// The three Stable Diffusion component graphs, built from their configs (nothing is
// sized for one model): CLIPTextModel, UNet2DConditionModel, the AutoencoderKL
// decoder. Inputs and outputs by name:
//   text encoder: in "input_ids" [B, 1, 1, S] (ids as floats)     out "last_hidden_state" [B, C, 1, S]
//   UNet: in "sample" [B, 4, h, w], "timestep" [B, 1, 1, 1], "encoder_hidden_states" [B, Cx, 1, L]
//         out "noise_pred" [B, 4, h, w]
//   VAE decoder: in "latents" [B, 4, h, w] (already divided by the scaling factor)
//         out "decoded" [B, 3, h * f, w * f]
#pragma once

#include "pipeline/model/graph.h"
#include "pipeline/model/model_config.h"

namespace sdspeed {

// weightPrefix: "text_model." for transformers' usual key names, "" where a
// checkpoint stores them without it.
Graph buildTextEncoderGraph(const ClipConfig& cfg, int64_t batch, int64_t tokens, const std::string& weightPrefix,
                            GraphOptions options = {});
Graph buildUNetGraph(const UNetConfig& cfg, int64_t batch, int64_t latentH, int64_t latentW, int64_t contextTokens,
                     GraphOptions options = {});
Graph buildVaeDecoderGraph(const VaeConfig& cfg, int64_t batch, int64_t latentH, int64_t latentW,
                           GraphOptions options = {});

}  // namespace sdspeed
