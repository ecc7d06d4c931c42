// `sdspeed quantize`'s work (cli/cmd_quantize.cpp parses the flags): int8/int4 weights
// quantized once and written as a diffusers-layout folder that `sdspeed run --model OUT
// --weights SAME` loads without quantizing again (a phone should not quantize 3.4 GB at
// every start). Blocks go exactly where a run quantizes at load (graphWeightFormats over
// the same graphs), stored as pipeline/quantized_file.h says, so both runs are
// bit-identical (tests/test_sd_fixture.cpp).
#pragma once

#include <ostream>
#include <string>

#include "pipeline/run/sd_pipeline.h"

namespace sdspeed {

// Writes OUT/{text_encoder/model,unet/diffusion_pytorch_model,vae/diffusion_pytorch_model}
// .safetensors (the weights sdspeed's graphs read: GEMM and conv matrices as blocks in the
// component's int8/int4 format, every other weight F16, or everything F32 for a component
// given f32), each atomically, and copies the configs, scheduler, tokenizer and
// model_index.json beside them. `model` names the source in the files' metadata (src.describe()
// for seeded random weights, whose values the files then hold; with --weights f16 that is
// how a checkpoint-less timing setup gets an f16 checkpoint to load); one line
// per component goes to `log`. Throws Error for bad input (naming it).
void quantizeModel(const ModelSource& src, const ExecOptions& exec, const std::string& out, const std::string& model,
                   std::ostream& log);

}  // namespace sdspeed
