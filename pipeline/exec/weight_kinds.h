// Layer kinds for per-kind weight formats (issue #20: which layer kinds must stay at 8 or
// 16 bits under int4): --weights int4,conv=int8,unet.attn=f16. A kind is a property of
// an op (its matrix weight), read from the graph node's label, which is the diffusers
// module path (pipeline/model/blocks.cpp): the same names in every component.
#pragma once

#include <string>
#include <vector>

#include "pipeline/model/graph.h"

namespace sdspeed {

// The kinds, in --weights order (kernels/QUANTIZATION.md "Per layer kind"):
//   conv        every convolution: conv_in/out, resnets' conv1/conv2/conv_shortcut,
//               down/upsamplers, the VAE's post_quant_conv
//   attn        attention projections: UNet attn1/attn2 and the VAE's mid-block to_q/k/v/
//               to_out.0, CLIP's self_attn.q/k/v/out_proj
//   ff          feed-forward Linears: the UNet's GEGLU ff.net.0.proj / ff.net.2, CLIP's mlp.fc1/fc2
//   proj        the UNet transformers' proj_in / proj_out
//   time_embed  time_embedding.linear_1/2 and every resnet's time_emb_proj
const std::vector<std::string>& weightKinds();

// The node's kind, or "" for an op with no matrix weight (norms, embeddings, attention
// itself): those follow their component's format (and stay f16 under int8/int4).
// Throws Error for a GEMM or convolution whose label matches no kind, so a new layer in
// a graph cannot silently escape a kind override.
std::string nodeWeightKind(const GraphNode& n);

}  // namespace sdspeed
