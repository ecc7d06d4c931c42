// The building blocks diffusers' UNet and VAE share, as graph fragments with
// diffusers' parameter names: ResnetBlock2D, Transformer2DModel (with its
// BasicTransformerBlocks), the VAE's single-head Attention, Up/Downsample2D.
#pragma once

#include <string>

#include "pipeline/model/graph.h"

namespace sdspeed {

// ResnetBlock2D: norm1+SiLU, conv1 (+ time_emb_proj(silu(temb)) per channel when
// tembAct >= 0), norm2+SiLU, conv2 + shortcut (conv_shortcut 1x1 when the channel
// count changes). Dropout is the identity at inference.
int resnetBlock(GraphBuilder& b, int x, const std::string& prefix, int64_t cout, int64_t groups, double eps,
                int tembAct);

// Transformer2DModel: GroupNorm(eps 1e-6), proj_in (a 1x1 conv or, with
// useLinearProjection, a Linear: the same product here), `layers`
// BasicTransformerBlocks (self-attention, cross-attention on `context`, GEGLU
// feed-forward, each behind a LayerNorm with a residual), proj_out + the input.
int transformer2d(GraphBuilder& b, int x, const std::string& prefix, int64_t heads, int64_t groups, int context,
                  bool useLinearProjection, int64_t layers);

// The VAE's mid-block Attention: GroupNorm, single-head self-attention with biased
// q/k/v, to_out + the input.
int vaeAttention(GraphBuilder& b, int x, const std::string& prefix, int64_t groups);

// Downsample2D (3x3 conv, stride 2, padding 1) and Upsample2D (nearest 2x + 3x3 conv).
int downsample(GraphBuilder& b, int x, const std::string& prefix);
int upsample(GraphBuilder& b, int x, const std::string& prefix);

}  // namespace sdspeed
