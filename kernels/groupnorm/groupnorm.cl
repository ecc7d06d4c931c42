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

// Sums over the work-group: the radix-8 tree in common/prelude.cl.
inline float2 gn_reduce2(float2 v, __local float2* buf) { return sd_reduce2(v, buf, WG); }

inline float gn_reduce(float v, __local float2* buf) { return gn_reduce2((float2)(v, 0.0f), buf).x; }

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
#if defined(SPLIT) && !defined(COOP)
// Grid (SPLIT * WG, N * G): work-group (chunk, n*G+g) writes the shifted sums of its
// share of group g to partials[(ng * SPLIT + chunk) * 2 + {0, 1}].
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gn_stats(x_PARAMS, const int G, SD_REGION(float, partials)) {
  __global float* partials = SD_AT(partials);
  __local float2 red[WG];
  const int chunk = get_group_id(0), ng = get_group_id(1);
  const int n = ng / G, g = ng % G, cpg = x_C / G, c0 = g * cpg;
  const float K = x_LOAD(n, c0, 0);
  const int nvec = cpg * (x_HW / VEC);
  const int per = (nvec + SPLIT - 1) / SPLIT;
  const int first = chunk * per, end = min(nvec, first + per);
  const int lid = get_local_id(0);
  const float2 s = gn_shifted_sums(x_ARGS, n, c0, cpg, K, first + lid, end, WG,
                                   chunk == 0 ? lid : -1, WG);
  const float2 t = gn_reduce2(s, red);
  if (lid == 0) {
    partials[(ng * SPLIT + chunk) * 2] = t.x;
    partials[(ng * SPLIT + chunk) * 2 + 1] = t.y;
  }
}

// Grid (roundup(HW, NWG), ceil(C/4), N): each item normalizes 4 channels (one slice)
// at one position, so one store covers a whole image texel. Items 0..3 first turn the
// partial sums of the (up to 4) groups of the slice into mean and rstd.
__kernel __attribute__((reqd_work_group_size(NWG, 1, 1)))
void gn_normalize(x_PARAMS, gamma_PARAMS, beta_PARAMS, res_PARAMS, y_PARAMS, const int G,
                  const float eps, const int flags, SD_REGION(const float, partials)) {
  __global const float* partials = SD_AT(partials);
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
// texel cannot take, so it exists for buffer storage only (as does split).
#if defined(CACHE) && !y_IS_IMAGE
// The work-group of the last group also writes the NC4HW4 padding lanes as zero.
inline void gn_zero_padding(y_PARAMS, const int n, const int g, const int G) {
  if (g != G - 1) return;
  const int pad = y_STORED_C - y_C;
  for (int j = get_local_id(0); j < pad * y_HW; j += WG) y_STORE(n, y_C + j / y_HW, j % y_HW, 0.0f);
}
#endif

#if defined(CACHE) && !defined(COOP) && !y_IS_IMAGE && !defined(SD_HALF)
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gn_one_pass(x_PARAMS, gamma_PARAMS, beta_PARAMS, res_PARAMS, y_PARAMS, const int G,
                 const float eps, const int flags) {
  __local float2 red[WG];
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
    float ga[CACHE], be[CACHE];  // gamma, beta fetched with x: off the critical path
    floatV acc = (floatV)(0.0f);
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
      const int j = lid + k * WG;
      v[k] = (floatV)(0.0f);
      ga[k] = be[k] = 0.0f;
      if (j < nvec) {
        const int c = c0 + j / hwv;
        v[k] = x_LOADV(n, c, (j % hwv) * VEC) - K;
        ga[k] = gamma_LOAD(0, c, 0);
        be[k] = beta_LOAD(0, c, 0);
      }
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
        floatV out = gn_actV((v[k] - mean) * (ga[k] * rstd) + be[k], flags);
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
  const float2 t = gn_reduce2(s, red);
  const float m = t.x / count;
  const float rstd = rsqrt(max(t.y / count - m * m, 0.0f) + eps);
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

// ---------------------------------------------------------------- one_pass_f16
// one_pass computing in half (SD_HALF, cl_khr_fp16): the same work-group per (n, g),
// the same kernel name and arguments. What stays f32, and why:
//   - the statistics: the sums of x - K and (x - K)^2 run over cpg * HW elements, up
//     to 1M per group (VAE at 512x512); a half sum would lose every term once it
//     passes 2048 times the term (11 bits) and overflows at 65504. So they accumulate
//     in f32 (gn_shifted_sums, gn_reduce2), as in one_pass, and mean and rstd are f32;
//   - x - K is formed in f32 before it becomes half: with a group mean near 1000 half's
//     spacing there is 0.5, but x - K is the data's spread, where half keeps 11 bits.
// In half: the register cache of x - K (half the registers of one_pass's at the same
// CACHE; the constraint VEC * CACHE <= 64 is one_pass's, not yet relaxed for half), and
// per element the normalization, affine, SiLU and residual add, on halfVEC vectors
// (paired half2 FMAs).
#if defined(CACHE) && !defined(COOP) && !y_IS_IMAGE && defined(SD_HALF)
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#define halfV SD_HALFN(VEC)
#define convert_halfV SD_CAT(convert_, halfV)
#define convert_floatV SD_CAT(convert_, floatV)

inline half gn_act_h(half v, int flags) { return (flags & GN_SILU) ? v / (1.0h + exp(-v)) : v; }
inline halfV gn_actV_h(halfV v, int flags) { return (flags & GN_SILU) ? v / (1.0h + exp(-v)) : v; }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gn_one_pass(x_PARAMS, gamma_PARAMS, beta_PARAMS, res_PARAMS, y_PARAMS, const int G,
                 const float eps, const int flags) {
  __local float2 red[WG];
  const int ng = get_group_id(1), lid = get_local_id(0);
  const int n = ng / G, g = ng % G, cpg = x_C / G, c0 = g * cpg;
  const int hwv = x_HW / VEC, tail = x_HW - hwv * VEC, nvec = cpg * hwv;
  const float count = (float)(cpg * x_HW);
  const float K = x_LOAD(n, c0, 0);
#if CACHE > 0
  if (tail == 0 && nvec <= WG * CACHE) {
    // Read x once: x - K summed in f32 and kept as half; the variance's second pass
    // reads the half copies back (exact two-pass in f32 over them).
    halfV v[CACHE];
    half ga[CACHE], be[CACHE];
    floatV acc = (floatV)(0.0f);
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
      const int j = lid + k * WG;
      v[k] = (halfV)(0.0h);
      ga[k] = be[k] = 0.0h;
      if (j < nvec) {
        const int c = c0 + j / hwv;
        const floatV d = x_LOADV(n, c, (j % hwv) * VEC) - K;
        acc += d;
        v[k] = convert_halfV(d);
        ga[k] = (half)gamma_LOAD(0, c, 0);
        be[k] = (half)beta_LOAD(0, c, 0);
      }
    }
    const float mean = gn_reduce(hsumV(acc), red) / count;  // of x - K
    floatV acc2 = (floatV)(0.0f);
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
      const floatV d = convert_floatV(v[k]) - mean;
      if (lid + k * WG < nvec) acc2 += d * d;
    }
    const half hmean = (half)mean, hrstd = (half)rsqrt(gn_reduce(hsumV(acc2), red) / count + eps);
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
      const int j = lid + k * WG;
      if (j < nvec) {
        const int c = c0 + j / hwv, hw = (j % hwv) * VEC;
        halfV out = gn_actV_h((v[k] - hmean) * (ga[k] * hrstd) + be[k], flags);
        if (flags & GN_RESIDUAL) out += convert_halfV(res_LOADV(n, c, hw));
        y_STOREV(n, c, hw, convert_floatV(out));
      }
    }
    gn_zero_padding(y_ARGS, n, g, G);
    return;
  }
#endif
  // Streaming: f32 shifted sums, then a second read of x normalized in half.
  const float2 t = gn_reduce2(gn_shifted_sums(x_ARGS, n, c0, cpg, K, lid, nvec, WG, lid, WG), red);
  const float m = t.x / count;
  const half hm = (half)m, hrstd = (half)rsqrt(max(t.y / count - m * m, 0.0f) + eps);
  for (int j = lid; j < nvec; j += WG) {
    const int c = c0 + j / hwv, hw = (j % hwv) * VEC;
    const halfV d = convert_halfV(x_LOADV(n, c, hw) - K);
    halfV out = gn_actV_h((d - hm) * ((half)gamma_LOAD(0, c, 0) * hrstd) + (half)beta_LOAD(0, c, 0), flags);
    if (flags & GN_RESIDUAL) out += convert_halfV(res_LOADV(n, c, hw));
    y_STOREV(n, c, hw, convert_floatV(out));
  }
  for (int j = lid; j < cpg * tail; j += WG) {
    const int c = c0 + j / tail, hw = hwv * VEC + j % tail;
    const half d = (half)(x_LOAD(n, c, hw) - K);
    half out = gn_act_h((d - hm) * ((half)gamma_LOAD(0, c, 0) * hrstd) + (half)beta_LOAD(0, c, 0), flags);
    if (flags & GN_RESIDUAL) out += (half)res_LOAD(n, c, hw);
    y_STORE(n, c, hw, (float)out);
  }
  gn_zero_padding(y_ARGS, n, g, G);
}
#endif  // SD_HALF

// ---------------------------------------------------------------- split
// SPLIT co-resident work-groups per (n, g), grid (SPLIT * WG, N * G), one kernel: each
// work-group reduces its share of the group to shifted sums, publishes them, waits
// for the group's other work-groups, then normalizes its share (still in registers
// when it fits). This spreads a group over several compute units without a second
// kernel launch. The wait is only safe when every work-group of the launch is
// resident at once: the family's rules allow it on GPUs for grids no larger than the
// device can hold, and a bounded spin turns any violation into NaN output (caught
// by the accuracy gate) rather than a hang.
// counters[ng] grows by SPLIT per launch (never reset); `target` is SPLIT times the
// launch's sequence number, so no clearing command is needed between launches.
// Memory-model assumption: OpenCL C 1.2 (all NVIDIA's OpenCL offers) has no
// device-scope acquire/release; the exchange relies on atomics being performed at
// the device-wide coherence point (the L2 on NVIDIA and AMD GPUs) in issue order
// after a global mem_fence. The accuracy gate checks every timed configuration.
// GN_NO_WAIT (tests only) skips the wait: launched twice on the same input, the
// second launch reads the first's partial sums, which lets PoCL, where work-groups
// are not co-resident, exercise the chunking of SPLIT > 1.
#if defined(COOP) && !y_IS_IMAGE
#define GN_MAX_SPINS (1 << 22)
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gn_split(x_PARAMS, gamma_PARAMS, beta_PARAMS, res_PARAMS, y_PARAMS, const int G,
              const float eps, const int flags, __global int* counters,
              SD_REGION(float, partials), const int target) {
  __global float* partials = SD_AT(partials);
  __local float2 red[WG];
  __local float sums[2 * SPLIT];
  __local int arrived;
  const int chunk = get_group_id(0), ng = get_group_id(1), lid = get_local_id(0);
  const int n = ng / G, g = ng % G, cpg = x_C / G, c0 = g * cpg;
  const int hwv = x_HW / VEC, tail = x_HW - hwv * VEC, nvec = cpg * hwv;
  const int per = (nvec + SPLIT - 1) / SPLIT;
  const int first = chunk * per, end = min(nvec, first + per);
  const float count = (float)(cpg * x_HW);
  const float K = x_LOAD(n, c0, 0);
  const bool cached = CACHE > 0 && tail == 0 && per <= WG * CACHE;
#if CACHE > 0
  floatV v[CACHE];
  float ga[CACHE], be[CACHE];  // gamma, beta fetched with x: off the critical path
#endif
  float2 s = (float2)(0.0f);
  if (cached) {
#if CACHE > 0
    floatV a1 = (floatV)(0.0f), a2 = (floatV)(0.0f);
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
      const int j = first + lid + k * WG;
      v[k] = (floatV)(0.0f);
      ga[k] = be[k] = 0.0f;
      if (j < end) {
        const int c = c0 + j / hwv;
        v[k] = x_LOADV(n, c, (j % hwv) * VEC) - K;
        ga[k] = gamma_LOAD(0, c, 0);
        be[k] = beta_LOAD(0, c, 0);
      }
      a1 += v[k];
      a2 += v[k] * v[k];
    }
    s = (float2)(hsumV(a1), hsumV(a2));
#endif
  } else {
    s = gn_shifted_sums(x_ARGS, n, c0, cpg, K, first + lid, end, WG, chunk == 0 ? lid : -1, WG);
  }
  const float2 mine = gn_reduce2(s, red);
  if (lid == 0) {
    // Publish through atomics (performed at the device-wide coherence point), fence,
    // then count this work-group in and wait for the rest of the group.
    atomic_xchg((volatile __global float*)&partials[(ng * SPLIT + chunk) * 2], mine.x);
    atomic_xchg((volatile __global float*)&partials[(ng * SPLIT + chunk) * 2 + 1], mine.y);
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    atomic_inc(&counters[ng]);
    int spins = 0;
#ifndef GN_NO_WAIT
    while (atomic_add(&counters[ng], 0) - target < 0 && ++spins < GN_MAX_SPINS) {
    }
#endif
    arrived = spins < GN_MAX_SPINS;
  }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  // All 2 * SPLIT sums read at once (one round trip, not 2 * SPLIT in a chain).
  if (lid < 2 * SPLIT)
    sums[lid] = as_float(atomic_or((volatile __global int*)&partials[ng * SPLIT * 2 + lid], 0));
  barrier(CLK_LOCAL_MEM_FENCE);
  float2 t = (float2)(0.0f);
  for (int k = 0; k < SPLIT; ++k) t += (float2)(sums[2 * k], sums[2 * k + 1]);
  const float m = t.x / count;
  const float rstd = arrived ? rsqrt(max(t.y / count - m * m, 0.0f) + eps) : NAN;
  if (cached) {
#if CACHE > 0
#pragma unroll
    for (int k = 0; k < CACHE; ++k) {
      const int j = first + lid + k * WG;
      if (j < end) {
        const int c = c0 + j / hwv, hw = (j % hwv) * VEC;
        floatV out = gn_actV((v[k] - m) * (ga[k] * rstd) + be[k], flags);
        if (flags & GN_RESIDUAL) out += res_LOADV(n, c, hw);
        y_STOREV(n, c, hw, out);
      }
    }
#endif
  } else {
    for (int j = first + lid; j < end; j += WG) {
      const int c = c0 + j / hwv, hw = (j % hwv) * VEC;
      floatV out = gn_actV(((x_LOADV(n, c, hw) - K) - m) * (gamma_LOAD(0, c, 0) * rstd) + beta_LOAD(0, c, 0), flags);
      if (flags & GN_RESIDUAL) out += res_LOADV(n, c, hw);
      y_STOREV(n, c, hw, out);
    }
    if (chunk == 0) {
      for (int j = lid; j < cpg * tail; j += WG) {
        const int c = c0 + j / tail, hw = hwv * VEC + j % tail;
        float out = gn_act(((x_LOAD(n, c, hw) - K) - m) * (gamma_LOAD(0, c, 0) * rstd) + beta_LOAD(0, c, 0), flags);
        if (flags & GN_RESIDUAL) out += res_LOAD(n, c, hw);
        y_STORE(n, c, hw, out);
      }
    }
  }
  if (chunk == 0) gn_zero_padding(y_ARGS, n, g, G);
}
#endif  // COOP
