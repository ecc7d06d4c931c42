// A compute shader compiled at build time (cmake/VulkanBackend.cmake, sdspeed_add_spirv):
// glslc runs once per -D variant, as in ggml-vulkan, and the SPIR-V words are embedded in
// the binary, so a pushed executable needs no glslc and no shader files. The GLSL is
// kept (preprocessed, with the variant's defines applied) for --dump-kernels.
//
// Tuning parameters go either into a -D variant (a separate SPIR-V module: what changes
// types or code structure, e.g. the storage type sfp and arithmetic type afp, as ncnn
// names them) or into specialization constants (runtime/vulkan/pipeline.h: sizes and
// unroll factors, one module serving every value, as ncnn does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sdspeed::vk {

struct SpirvShader {
  const char* name;     // the NAME given to sdspeed_add_spirv, e.g. "axpb_f16"
  const char* defines;  // "SFP=float16_t AFP=float16_t": the variant's -D flags
  const char* glsl;     // preprocessed source
  size_t glslBytes;
  const uint32_t* words;  // SPIR-V
  size_t wordCount;

  size_t spirvBytes() const { return wordCount * sizeof(uint32_t); }
  std::string spirvString() const { return std::string(reinterpret_cast<const char*>(words), spirvBytes()); }
};

}  // namespace sdspeed::vk

// Declares an embedded shader at namespace scope: SDSPEED_SPIRV_SHADER(axpb_f32);
// then use sdspeed::vk::shaders::axpb_f32.
#define SDSPEED_SPIRV_SHADER(symbol) \
  namespace sdspeed::vk::shaders {   \
  extern const SpirvShader symbol;   \
  }
