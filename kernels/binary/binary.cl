// y = a + b (fn 0) or a * b (fn 1), elementwise. b has a's shape or is [N, C, 1, 1]
// (the ResNet time-embedding add: one value per (n, c) broadcast over H and W); the
// kernel tells them apart by b_HW == 1, so one program serves both.
// Grid (roundup(ceil(HW / ITEMS), WG), slices, N); item i of a work-item handles
// position gid0 + i * global_size0, so neighbouring work-items read neighbouring
// positions. Whole slices through LOAD4/STORE4: every storage format works.
// Parameters: WG (work-group size), ITEMS (positions per work-item).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void binary_slices(a_PARAMS, b_PARAMS, y_PARAMS, const int fn) {
  const int s = get_global_id(1), n = get_global_id(2);
  const int bstep = b_HW == 1 ? 0 : 1;  // broadcast: every position reads b's one value
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int hw = get_global_id(0) + i * get_global_size(0);
    if (hw >= y_HW) return;
    const float4 av = a_LOAD4(n, s, hw), bv = b_LOAD4(n, s, hw * bstep);
    y_STORE4(n, s, hw, fn == 0 ? av + bv : av * bv);
  }
}

#ifdef SD_HALF
// slices_f16: the same in half4 (a paired half2 add/multiply where the GPU pairs them).
// Nothing is reduced, so nothing accumulates in f32.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void binary_slices_f16(a_PARAMS, b_PARAMS, y_PARAMS, const int fn) {
  const int s = get_global_id(1), n = get_global_id(2);
  const int bstep = b_HW == 1 ? 0 : 1;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int hw = get_global_id(0) + i * get_global_size(0);
    if (hw >= y_HW) return;
    const half4 av = convert_half4(a_LOAD4(n, s, hw)), bv = convert_half4(b_LOAD4(n, s, hw * bstep));
    y_STORE4(n, s, hw, convert_float4(fn == 0 ? av + bv : av * bv));
  }
}
#endif  // SD_HALF
