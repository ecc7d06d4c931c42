// Nearest-neighbour upsampling by an integer factor F (diffusers Upsample2D: F = 2):
// y[n, c, h, w] = x[n, c, h / F, w / F], F = y_W / x_W (a shape, not a #define).
// A work-item per (sample, output slice, ITEMS output positions), positions strided
// by the grid width; whole slices through LOAD4/STORE4 (every storage format).
// Parameters: WG (work-group size), ITEMS (output positions per work-item).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void upsample_slices(x_PARAMS, y_PARAMS) {
  const int s = get_global_id(1), n = get_global_id(2);
  const int F = y_W / x_W;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int hw = get_global_id(0) + i * get_global_size(0);
    if (hw >= y_HW) return;
    const int h = hw / y_W, w = hw - h * y_W;
    y_STORE4(n, s, hw, x_LOAD4(n, s, (h / F) * x_W + w / F));
  }
}
