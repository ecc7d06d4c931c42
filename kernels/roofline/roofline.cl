// The device's two ceilings, measured once by `sdspeed roofline`:
//   copy4: a large buffer copy, bytes read + written per second;
//   fma:   independent fused multiply-add chains, FLOP/s (2 per FMA), fp32.

__kernel void copy4(__global const float4* in, __global float4* out, const int n) {
  for (int i = get_global_id(0); i < n; i += get_global_size(0)) out[i] = in[i];
}

// Eight independent chains per item keep the FMA pipes busy; the chain is
// acc = fma(acc, a, b), which the host recomputes exactly to check the result.
__kernel void fma_chains(__global float* out, const int iters, const float a, const float b) {
  const float seed = (float)(get_global_id(0) & 1023) * 1e-3f;
  float8 acc = (float8)(seed) + (float8)(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f) * 1e-4f;
  for (int i = 0; i < iters; ++i) acc = fma(acc, (float8)(a), (float8)(b));
  out[get_global_id(0)] = acc.s0 + acc.s1 + acc.s2 + acc.s3 + acc.s4 + acc.s5 + acc.s6 + acc.s7;
}
