// Channel concatenation y = [a; b] along C: a [N, C1, H, W], b [N, C2, H, W],
// y [N, C1 + C2, H, W]. C1 need not be a multiple of 4 (the UNet concatenates
// 320 + 640 and such, but test shapes have odd C1): an output slice wholly inside a,
// or wholly inside b when C1 % 4 == 0, is one LOAD4; a slice that straddles the
// boundary, or any b slice when b's slices are not aligned with y's, is gathered
// channel by channel. Every output slice goes out through STORE4 (every format).
// A work-item per (sample, output slice, ITEMS positions), positions strided by the
// grid width. Parameters: WG (work-group size), ITEMS (positions per work-item).

// Output channel c at position hw (0 for the padding lanes past y's last channel).
inline float cat_lane(a_PARAMS, b_PARAMS, const int yC, const int n, const int c, const int hw) {
  if (c < a_C) return a_LOAD(n, c, hw);
  return c < yC ? b_LOAD(n, c - a_C, hw) : 0.0f;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void concat_slices(a_PARAMS, b_PARAMS, y_PARAMS) {
  const int s = get_global_id(1), n = get_global_id(2);
  const int c = 4 * s;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int hw = get_global_id(0) + i * get_global_size(0);
    if (hw >= y_HW) return;
    float4 v;
    if (c + 4 <= a_C) v = a_LOAD4(n, s, hw);
    else if ((a_C & 3) == 0) v = b_LOAD4(n, s - (a_C >> 2), hw);  // lanes past b's C read 0
    else
      v = (float4)(cat_lane(a_ARGS, b_ARGS, y_C, n, c, hw), cat_lane(a_ARGS, b_ARGS, y_C, n, c + 1, hw),
                   cat_lane(a_ARGS, b_ARGS, y_C, n, c + 2, hw), cat_lane(a_ARGS, b_ARGS, y_C, n, c + 3, hw));
    y_STORE4(n, s, hw, v);
  }
}
