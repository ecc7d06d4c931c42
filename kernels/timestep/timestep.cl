// Sinusoidal timestep embedding, as diffusers get_timestep_embedding(t, dim,
// flip_sin_to_cos, downscale_freq_shift, scale=1, max_period=10000):
//   half = dim / 2, freq_j = exp(-ln(10000) * j / (half - shift)), arg = t * freq_j,
//   y = [sin(arg), cos(arg)], or [cos(arg), sin(arg)] when flipped, and a zero last
//   column when dim is odd. The same float operations in the same order as diffusers.
// t [B, 1, 1, 1] is an f32 parameter buffer; y [B, dim, 1, 1] is in the run's format.
// A work-item per (output slice, sample), 4 channels through STORE4.
// Parameter: WG (work-group size).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void timestep_per_slice(t_PARAMS, y_PARAMS, const float shift, const int flip) {
  const int s = get_global_id(0), n = get_global_id(1);
  if (s >= y_SLICES) return;
  const int nh = y_C / 2;  // diffusers half_dim ("half" is a type in OpenCL C)
  const float t = t_LOAD(n, 0, 0);
  float v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int c = 4 * s + k;
    v[k] = 0.0f;  // the odd-dim column and lanes past dim (masked by STORE4)
    if (c < 2 * nh) {
      const int j = c < nh ? c : c - nh;
      const float arg = t * exp(-9.210340371976184f * (float)j / ((float)nh - shift));  // ln 10000
      v[k] = (c < nh) != (flip != 0) ? sin(arg) : cos(arg);  // sin first unless flipped
    }
  }
  y_STORE4(n, s, 0, (float4)(v[0], v[1], v[2], v[3]));
}
