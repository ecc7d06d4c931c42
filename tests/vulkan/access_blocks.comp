#version 450
// The blocks spirv_access.h answers Write for though no member is written through them
// (tests/test_vulkan_barriers.cpp; a module for the walker alone, never made a pipeline:
// binding 1's array needs a descriptor count of 2): 0 one block, member 0 read only and
// member 1 writable, so the binding is written; 1 an array of read-only blocks, which the
// walk does not follow (written: the safe answer).
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer P { readonly float pa; float pb[]; };
layout(std430, binding = 1) readonly buffer A { float v[]; } arr[2];
void main() {
  const uint i = gl_GlobalInvocationID.x;
  pb[i] = pa + arr[i & 1u].v[i];
}
