#version 450
// The device's two ceilings on Vulkan (roofline.cl's twins, `sdspeed roofline --backend
// vulkan`): COPY = 1, a large buffer copy in vec4s (grid-stride loop); else independent
// FMA chains, 8 per invocation, acc = fma(acc, a, b), which the host recomputes exactly.
layout(local_size_x_id = 0) in;

#if COPY
layout(std430, binding = 0) readonly buffer In { vec4 src[]; };
layout(std430, binding = 1) writeonly buffer Out { vec4 dst[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) dst[i] = src[i];
}
#else
layout(std430, binding = 0) writeonly buffer Out { float res[]; };
layout(push_constant) uniform Push { uint iters; float a, b; } p;
void main() {
  const uint gid = gl_GlobalInvocationID.x;
  const float seed = float(gid & 1023u) * 1e-3;
  float acc[8];
  for (int k = 0; k < 8; ++k) acc[k] = seed + float(k) * 1e-4;
  for (uint i = 0u; i < p.iters; ++i)
    for (int k = 0; k < 8; ++k) acc[k] = fma(acc[k], p.a, p.b);
  res[gid] = acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
}
#endif
