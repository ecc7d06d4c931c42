// GroupNorm (+SiLU, +residual) over NCHW logical tensors, every storage format.
//   y = act((x - mean_g) * rstd_g * gamma_c + beta_c) + res
// Tensors (accessors generated from the run's StorageFormat): x, res (read),
// y (write); gamma, beta (read, always f32 buffers). Shapes, G, eps and flags are
// kernel arguments so one program serves every shape.
// Compile-time parameters (#defines from the family declaration):
//   WG     work-group size of the statistics kernels (power of two)
//   VEC    hw positions per vector load
//   SPLIT  two_pass: work-groups sharing one group's statistics
//   NWG    two_pass: work-group size of the normalize kernel
//   CACHE  one_pass: VEC-vectors per work-item kept in registers (0 = re-read x)
//
// Variance without E[x^2]-E[x]^2 cancellation: the register path of one_pass is an
// exact two-pass over registers; the streaming paths sum (x - K) and (x - K)^2 with K
// the group's first element, which keeps the sums near the data's spread however
// large its mean (a shifted-data variance).

#define GN_SILU 1
#define GN_RESIDUAL 2

#ifndef VEC
#define VEC 1
#endif
#define floatV SD_FLOATN(VEC)
#define hsumV SD_HSUM(VEC)

// Sum of v over the work-group (WG items, power of two); every item gets the total.
inline float gn_reduce(float v, __local float* buf) {
  const int lid = get_local_id(0);
  buf[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int off = WG / 2; off > 0; off >>= 1) {
    if (lid < off) buf[lid] += buf[lid + off];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float total = buf[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // buf is reused right after
  return total;
}

// Sums of (x - K) and (x - K)^2 over this item's share of elements [first, end) of
// group (n, g), walked with stride `stride` in VEC-vectors; tails (HW % VEC) by `tail_item`.
inline float2 gn_shifted_sums(x_PARAMS, const int n, const int c0, const int cpg, const float K,
                              const int first, const int end, const int stride,
                              const int tail_item, const int tail_stride) {
  const int hwv = x_HW / VEC;
  floatV s1 = (floatV)(0.0f), s2 = (floatV)(0.0f);
  for (int j = first; j < end; j += stride) {
    const int c = c0 + j / hwv;
    const int hw = (j % hwv) * VEC;
    const floatV d = x_LOADV(n, c, hw) - K;
    s1 += d;
    s2 += d * d;
  }
  float t1 = hsumV(s1), t2 = hsumV(s2);
  const int tail = x_HW - hwv * VEC;
  if (tail > 0 && tail_item >= 0) {
    for (int j = tail_item; j < cpg * tail; j += tail_stride) {
      const float d = x_LOAD(n, c0 + j / tail, hwv * VEC + j % tail) - K;
      t1 += d;
      t2 += d * d;
    }
  }
  return (float2)(t1, t2);
}

inline float gn_act(float v, int flags) { return (flags & GN_SILU) ? v / (1.0f + exp(-v)) : v; }
inline floatV gn_actV(floatV v, int flags) { return (flags & GN_SILU) ? v / (1.0f + exp(-v)) : v; }

// ---------------------------------------------------------------- two_pass
#ifdef SPLIT
// Grid (SPLIT * WG, N * G): work-group (chunk, n*G+g) writes the shifted sums of its
// share of group g to partials[(ng * SPLIT + chunk) * 2 + {0, 1}].
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gn_stats(x_PARAMS, const int G, __global float* partials) {
  __local float red[WG];
  const int chunk = get_group_id(0), ng = get_group_id(1);
  const int n = ng / G, g = ng % G, cpg = x_C / G, c0 = g * cpg;
  const float K = x_LOAD(n, c0, 0);
  const int nvec = cpg * (x_HW / VEC);
  const int per = (nvec + SPLIT - 1) / SPLIT;
  const int first = chunk * per, end = min(nvec, first + per);
  const int lid = get_local_id(0);
  const float2 s = gn_shifted_sums(x_ARGS, n, c0, cpg, K, first + lid, end, WG,
                                   chunk == 0 ? lid : -1, WG);
  const float t1 = gn_reduce(s.x, red);
  const float t2 = gn_reduce(s.y, red);
  if (lid == 0) {
    partials[(ng * SPLIT + chunk) * 2] = t1;
    partials[(ng * SPLIT + chunk) * 2 + 1] = t2;
  }
}

// Grid (roundup(HW, NWG), ceil(C/4), N): each item normalizes 4 channels (one slice)
// at one position, so one store covers a whole image texel. Items 0..3 first turn the
// partial sums of the (up to 4) groups of the slice into mean and rstd.
__kernel __attribute__((reqd_work_group_size(NWG, 1, 1)))
void gn_normalize(x_PARAMS, gamma_PARAMS, beta_PARAMS, res_PARAMS, y_PARAMS, const int G,
                  const float eps, const int flags, __global const float* partials) {
  __local float shift[4], offset[4], rstd[4];
  const int hw = get_global_id(0), s = get_global_id(1), n = get_global_id(2);
  const int lid = get_local_id(0), cpg = x_C / G;
  if (lid < 4) {
    const int c = min(4 * s + lid, x_C - 1);  // pad lanes reuse the last channel's group
    const int g = c / cpg, ng = n * G + g;
    float t1 = 0.0f, t2 = 0.0f;
    for (int k = 0; k < SPLIT; ++k) {
      t1 += partials[(ng * SPLIT + k) * 2];
      t2 += partials[(ng * SPLIT + k) * 2 + 1];
    }
    const float count = (float)(cpg * x_HW);
    const float m = t1 / count;
    const float var = max(t2 / count - m * m, 0.0f);
    shift[lid] = x_LOAD(n, g * cpg, 0);  // the K gn_stats used; mean = K + m
    offset[lid] = m;
    rstd[lid] = rsqrt(var + eps);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (hw >= x_HW) return;
  const float4 v = x_LOAD4(n, s, hw);
  const int c = 4 * s;
  const int c1 = min(c + 1, x_C - 1), c2 = min(c + 2, x_C - 1), c3 = min(c + 3, x_C - 1);
  const float4 a = (float4)(gamma_LOAD(0, c, 0), gamma_LOAD(0, c1, 0), gamma_LOAD(0, c2, 0),
                            gamma_LOAD(0, c3, 0)) *
                   (float4)(rstd[0], rstd[1], rstd[2], rstd[3]);
  const float4 b = (float4)(beta_LOAD(0, c, 0), beta_LOAD(0, c1, 0), beta_LOAD(0, c2, 0),
                            beta_LOAD(0, c3, 0));
  // (x - K) - m, not x - (K + m): K + m would round the mean to the precision of x.
  float4 out = ((v - (float4)(shift[0], shift[1], shift[2], shift[3])) -
                (float4)(offset[0], offset[1], offset[2], offset[3])) * a + b;
  if (flags & GN_SILU) out = out / (1.0f + exp(-out));
  if (flags & GN_RESIDUAL) out += res_LOAD4(n, s, hw);
  y_STORE4(n, s, hw, out);
}
#endif  // SPLIT

// ---------------------------------------------------------------- one_pass
// One work-group per (n, g), grid (WG, N * G): statistics and normalization in one
// kernel (the paper's "one GPU command"). It stores single channels, which an image
// texel cannot take, so it exists for buffer storage only.
#if defined(CACHE) && !y_IS_IMAGE
// The work-group of the last group also writes the NC4HW4 padding lanes as zero.
inline void gn_zero_padding(y_PARAMS, const int n, const int g, const int G) {
  if (g != G - 1) return;
  const int pad = y_STORED_C - y_C;
  for (int j = get_local_id(0); j < pad * y_HW; j += WG) y_STORE(n, y_C + j / y_HW, j % y_HW, 0.0f);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gn_one_pass(x_PARAMS, gamma_PARAMS, beta_PARAMS, res_PARAMS, y_PARAMS, const int G,
                 const float eps, const int flags) {
  __local float red[WG];
  const int ng = get_group_id(1), lid = get_local_id(0);
  const int n = ng / G, g = ng % G, cpg = x_C / G, c0 = g * cpg;
  const int hwv = x_HW / VEC, tail = x_HW - hwv * VEC, nvec = cpg * hwv;
  const float count = (float)(cpg * x_HW);
#if CACHE > 0
  if (tail == 0 && nvec <= WG * CACHE) {
    // The whole group fits in registers: read x once, exact two-pass variance. Values
    // are kept shifted by K so a large mean does not cost the sum its precision.
    const float K = x_LOAD(n, c0, 0);
    floatV v[CACHE];
    floatV acc = (floatV)(0.0f);
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
      const int j = lid + k * WG;
      v[k] = (floatV)(0.0f);
      if (j < nvec) v[k] = x_LOADV(n, c0 + j / hwv, (j % hwv) * VEC) - K;
      acc += v[k];
    }
    const float mean = gn_reduce(hsumV(acc), red) / count;  // of x - K
    floatV acc2 = (floatV)(0.0f);
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
      const floatV d = v[k] - mean;
      if (lid + k * WG < nvec) acc2 += d * d;
    }
    const float rstd = rsqrt(gn_reduce(hsumV(acc2), red) / count + eps);
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
      const int j = lid + k * WG;
      if (j < nvec) {
        const int c = c0 + j / hwv, hw = (j % hwv) * VEC;
        floatV out = gn_actV((v[k] - mean) * (gamma_LOAD(0, c, 0) * rstd) + beta_LOAD(0, c, 0), flags);
        if (flags & GN_RESIDUAL) out += res_LOADV(n, c, hw);
        y_STOREV(n, c, hw, out);
      }
    }
    gn_zero_padding(y_ARGS, n, g, G);
    return;
  }
#endif
  // Streaming: shifted sums, then a second read of x to normalize.
  const float K = x_LOAD(n, c0, 0);
  const float2 s = gn_shifted_sums(x_ARGS, n, c0, cpg, K, lid, nvec, WG, lid, WG);
  const float t1 = gn_reduce(s.x, red), t2 = gn_reduce(s.y, red);
  const float m = t1 / count;
  const float rstd = rsqrt(max(t2 / count - m * m, 0.0f) + eps);
  for (int j = lid; j < nvec; j += WG) {
    const int c = c0 + j / hwv, hw = (j % hwv) * VEC;
    floatV out = gn_actV(((x_LOADV(n, c, hw) - K) - m) * (gamma_LOAD(0, c, 0) * rstd) + beta_LOAD(0, c, 0), flags);
    if (flags & GN_RESIDUAL) out += res_LOADV(n, c, hw);
    y_STOREV(n, c, hw, out);
  }
  for (int j = lid; j < cpg * tail; j += WG) {
    const int c = c0 + j / tail, hw = hwv * VEC + j % tail;
    float out = gn_act(((x_LOAD(n, c, hw) - K) - m) * (gamma_LOAD(0, c, 0) * rstd) + beta_LOAD(0, c, 0), flags);
    if (flags & GN_RESIDUAL) out += res_LOAD(n, c, hw);
    y_STORE(n, c, hw, out);
  }
  gn_zero_padding(y_ARGS, n, g, G);
}
#endif  // CACHE
