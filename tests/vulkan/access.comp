#version 450
// Bindings with every access spirv_access.h tells apart (tests/test_vulkan_barriers.cpp):
// 0 read only, through two aliased blocks; 1 read and written; 2 write only; 3 declared
// but never used (glslc -O drops it); 4 aliased, read only in one block and written
// through the other.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer Z { float z[]; };
layout(std430, binding = 3) readonly buffer Unused { float unused[]; };
layout(std430, binding = 4) readonly buffer W { float w[]; };
layout(std430, binding = 4) writeonly buffer W2 { float w2[]; };
void main() {
  const uint i = gl_GlobalInvocationID.x;
  y[i] += x[i] + x4[i / 4u][i % 4u] + w[i];
  z[i] = y[i];
  w2[i + 1u] = 1.0;
}
