// CLIP's input embeddings: y[b, c, 0, s] = tok[ids[b, s], c] + pos[s, c].
// ids [B, 1, 1, S] holds integer token ids as floats (exact up to 2^24; CLIP's
// vocabulary is 49408) in an f32 parameter buffer; tok [V, C, 1, 1] and pos [P, C, 1, 1]
// are the row-major [V, C] and [P, C] tables, f32 parameter buffers; y is a token
// tensor [B, C, 1, S] in the run's storage format. The host rejects ids outside
// [0, V) before the launch (embedding_family.cpp), so the gather needs no bounds check.
// A work-item per (sample, output slice, ITEMS tokens), tokens strided by the grid
// width. Parameters: WG (work-group size), ITEMS (tokens per work-item).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void embedding_slices(ids_PARAMS, tok_PARAMS, pos_PARAMS, y_PARAMS) {
  const int s = get_global_id(1), n = get_global_id(2);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int t = get_global_id(0) + i * get_global_size(0);
    if (t >= y_HW) return;
    const int id = (int)ids_LOAD(n, 0, t);
    y_STORE4(n, s, t, tok_LOAD4(id, s, 0) + pos_LOAD4(t, s, 0));
  }
}
