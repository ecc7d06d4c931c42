// The size of each component's graph computed from its config alone, before the graph
// is built: ops, weight elements and the largest activation, in long double so that an
// absurd config (layers_per_block: 1000000000, a channel count of 10^12) is counted, not
// overflowed or allocated. The formulas follow the builders (unet_graph.cpp,
// vae_graph.cpp, text_encoder_graph.cpp, blocks.cpp) op by op; tests/test_model_size.cpp
// holds them equal to the built graphs' counts, so a builder change that is not mirrored
// here fails there. pipeline/run/memory_check.h turns them into the run's memory estimate.
#pragma once

#include <cstdint>

#include "pipeline/model/model_config.h"

namespace sdspeed {

struct ComponentSize {
  long double nodes = 0;              // ops (Graph::nodes())
  long double weightElements = 0;     // over every weight tensor
  long double largestWeight = 0;      // elements of the largest weight tensor (one host copy at load)
  long double largestActivation = 0;  // elements of the largest activation tensor, inputs included
};

// fuse: GraphOptions::fuseActivations (false adds an activation op per fused epilogue).
ComponentSize unetSize(const UNetConfig& cfg, int64_t batch, int64_t latentH, int64_t latentW, int64_t contextTokens,
                       bool fuse = true);
ComponentSize vaeDecoderSize(const VaeConfig& cfg, int64_t batch, int64_t latentH, int64_t latentW, bool fuse = true);
ComponentSize textEncoderSize(const ClipConfig& cfg, int64_t batch, int64_t tokens, bool fuse = true);

}  // namespace sdspeed
