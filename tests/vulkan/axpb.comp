#version 450
// y[i] = a * x[i] + b for i < n: the Vulkan runtime's test shader (tests/test_vulkan.cpp).
// Variants, as ncnn names the two types: SFP, the storage type of x and y; AFP, the type
// the arithmetic is done in. glslc -D picks them (tests/CMakeLists.txt); the work-group
// size is specialization constant 0, one SPIR-V module for every size.
#if defined(SFP_F16)
#extension GL_EXT_shader_16bit_storage : require
#define SFP float16_t
#else
#define SFP float
#endif
#if defined(AFP_F16)
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define AFP float16_t
#else
#define AFP float
#endif

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
  uint n;
  float a;
  float b;
} p;

layout(std430, binding = 0) readonly buffer X { SFP x[]; };
layout(std430, binding = 1) writeonly buffer Y { SFP y[]; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < p.n) y[i] = SFP(AFP(p.a) * AFP(x[i]) + AFP(p.b));
}
