// A plain GroupNorm kernel (one work-group per (n, g), two passes over memory) with
// deliberate bugs selected by BUG, for tests/test_broken_kernels.cpp: the check
// harness must catch each of them.
//   BUG 0  correct
//   BUG 1  skips the tail: elements past the last multiple of WG are never written
//   BUG 2  wrong eps (100x)
//   BUG 3  writes one element past the end of its output
//   BUG 4  leaves the NC4HW4 padding lanes unwritten
//   BUG 5  normalizes each group with the next group's statistics
//   BUG 9  does not compile
// Buffer storage only (single-channel stores).

#if BUG == 9
#error deliberate build failure (BUG 9)
#endif

inline float plain_reduce(float v, __local float* buf) {
  const int lid = get_local_id(0);
  buf[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int off = WG / 2; off > 0; off >>= 1) {
    if (lid < off) buf[lid] += buf[lid + off];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float t = buf[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return t;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gn_plain(x_PARAMS, gamma_PARAMS, beta_PARAMS, res_PARAMS, y_PARAMS, const int G,
              const float eps, const int flags) {
  __local float red[WG];
  const int ng = get_group_id(1), lid = get_local_id(0);
  const int n = ng / G, g = ng % G, cpg = x_C / G, count = cpg * x_HW;
#if BUG == 5
  const int c0s = ((g + 1) % G) * cpg;  // statistics from the wrong group
#else
  const int c0s = g * cpg;
#endif
  const int c0 = g * cpg;
  float s = 0.0f;
  for (int j = lid; j < count; j += WG) s += x_LOAD(n, c0s + j / x_HW, j % x_HW);
  const float mean = plain_reduce(s, red) / count;
  float q = 0.0f;
  for (int j = lid; j < count; j += WG) {
    const float d = x_LOAD(n, c0s + j / x_HW, j % x_HW) - mean;
    q += d * d;
  }
#if BUG == 2
  const float rstd = rsqrt(plain_reduce(q, red) / count + 100.0f * eps);
#else
  const float rstd = rsqrt(plain_reduce(q, red) / count + eps);
#endif
#if BUG == 1
  const int end = count - count % WG;
#else
  const int end = count;
#endif
  for (int j = lid; j < end; j += WG) {
    const int c = c0 + j / x_HW, hw = j % x_HW;
    float v = (x_LOAD(n, c, hw) - mean) * rstd * gamma_LOAD(0, c, 0) + beta_LOAD(0, c, 0);
    if (flags & 1) v = v / (1.0f + exp(-v));
    if (flags & 2) v += res_LOAD(n, c, hw);
    y_STORE(n, c, hw, v);
  }
#if BUG != 4
  if (g == G - 1)  // zero the padding channels [C, STORED_C) of this sample
    for (int j = lid; j < (y_STORED_C - y_C) * y_HW; j += WG) y_STORE(n, y_C + j / y_HW, j % y_HW, 0.0f);
#endif
#if BUG == 3
  if (lid == 0 && ng == get_num_groups(1) - 1) y_STORE(n, y_STORED_C, 0, 0.0f);  // one past the end
#endif
}
