// Regroups H and W: x [N, C, H, W] -> y [N, C, H', W'] with H * W == H' * W', the
// logical position hw = h * W + w unchanged. This is the NCHW <-> token transpose of
// the pipeline: an image [B, C, H, W] and its tokens [B, H*W, C] (logically
// [B, C, 1, H*W]) are the same data. In buffer storage (NCHW or NC4HW4) the bytes
// are identical, so a runtime can alias instead of launching this; in image2d
// storage the texel rows are W wide, so the data must move: this copy.
// A work-item per (sample, slice, ITEMS positions), positions strided by the grid
// width. Parameters: WG (work-group size), ITEMS (positions per work-item).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reshape_slices(x_PARAMS, y_PARAMS) {
  const int s = get_global_id(1), n = get_global_id(2);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int hw = get_global_id(0) + i * get_global_size(0);
    if (hw >= y_HW) return;
    y_STORE4(n, s, hw, x_LOAD4(n, s, hw));
  }
}
