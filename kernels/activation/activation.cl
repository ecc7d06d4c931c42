// Elementwise activations of the Stable Diffusion models, one kernel body per
// function selected by the `fn` argument (a kernel argument, so one program serves
// them all):
//   0 gelu        0.5 x (1 + erf(x / sqrt 2))                     (exact, diffusers "gelu")
//   1 gelu_tanh   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  ("gelu-approximate")
//   2 quick_gelu  x sigmoid(1.702 x)                               (CLIP)
//   3 silu        x sigmoid(x)
//   4 geglu       hidden * gelu(gate): x has 2F channels, hidden = [0, F), gate = [F, 2F);
//                 y has F channels (diffusers GEGLU)
// x (read), y (write); work-item per (n, output slice, position), ITEMS positions each,
// through LOAD4/STORE4, so every storage format works. For geglu the gate channels
// start at F, which need not be a slice boundary: they are read lane by lane.
// Parameters: WG (work-group size), ITEMS (positions per work-item).

inline float4 act_gelu(float4 v) { return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f)); }

inline float4 act_apply(float4 v, int fn) {
  if (fn == 0) return act_gelu(v);
  if (fn == 1) {
    const float4 u = 0.79788456080286536f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanh(u));
  }
  if (fn == 2) return v / (1.0f + exp(-1.702f * v));
  return v / (1.0f + exp(-v));
}

// Grid (roundup(ceil(HW / ITEMS), WG), output slices, N).
#ifndef SD_HALF
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void act_slices(x_PARAMS, y_PARAMS, const int fn) {
  const int s = get_global_id(1), n = get_global_id(2);
  const int first = get_global_id(0) * ITEMS;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int hw = first + i;
    if (hw >= x_HW) return;
    float4 out;
    if (fn == 4) {
      const int F = y_C, c = 4 * s;
      const float4 hidden = x_LOAD4(n, s, hw);  // lanes past F belong to the gate: masked on store
      const float4 gate = (float4)(x_LOAD(n, F + c, hw), x_LOAD(n, F + min(c + 1, F - 1), hw),
                                   x_LOAD(n, F + min(c + 2, F - 1), hw), x_LOAD(n, F + min(c + 3, F - 1), hw));
      out = hidden * act_gelu(gate);
    } else {
      out = act_apply(x_LOAD4(n, s, hw), fn);
    }
    y_STORE4(n, s, hw, out);
  }
}
#else  // SD_HALF: slices_f16, the same kernel computing in half
// Every operation on half4 (two paired half2 FMAs where the GPU pairs them: Adreno,
// Mali); nothing is reduced, so nothing accumulates in f32. Loads and stores stay the
// float accessors' (vload_half/vstore_half for f16 storage: the float round trip of a
// half is exact, and the compiler folds it into the half load). Overflow is benign:
// exp(-v) > 65504 (v < -11.1) is inf in half, and v / inf = -0, where the true value
// is under 2e-4 in magnitude.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

inline half4 act_gelu_h(half4 v) { return 0.5h * v * (1.0h + erf(v * 0.70710678h)); }

inline half4 act_apply_h(half4 v, int fn) {
  if (fn == 0) return act_gelu_h(v);
  if (fn == 1) {
    const half4 u = 0.79788456h * (v + 0.044715h * v * v * v);
    return 0.5h * v * (1.0h + tanh(u));
  }
  if (fn == 2) return v / (1.0h + exp(-1.702h * v));
  return v / (1.0h + exp(-v));
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void act_slices(x_PARAMS, y_PARAMS, const int fn) {
  const int s = get_global_id(1), n = get_global_id(2);
  const int first = get_global_id(0) * ITEMS;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int hw = first + i;
    if (hw >= x_HW) return;
    half4 out;
    if (fn == 4) {
      const int F = y_C, c = 4 * s;
      const half4 hidden = convert_half4(x_LOAD4(n, s, hw));  // lanes past F: masked on store
      const half4 gate = convert_half4((float4)(x_LOAD(n, F + c, hw), x_LOAD(n, F + min(c + 1, F - 1), hw),
                                                x_LOAD(n, F + min(c + 2, F - 1), hw),
                                                x_LOAD(n, F + min(c + 3, F - 1), hw)));
      out = hidden * act_gelu_h(gate);
    } else {
      out = act_apply_h(convert_half4(x_LOAD4(n, s, hw)), fn);
    }
    y_STORE4(n, s, hw, convert_float4(out));
  }
}
#endif  // SD_HALF
