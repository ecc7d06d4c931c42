// attention.comp's stages 0-2, the naive and partially fused variants (attn_scores,
// attn_row_softmax and attn_pv of attention.cl, in the same order of operations).

const uint TT = T * R;   // a tile's rows (and columns) of scores or outputs
const uint KS = 4u;      // head slices per shared-memory stage of the scores
const uint KL = 16u;     // keys per shared-memory stage of pv
// + 1 per row: rows read by neighbouring invocations fall in different banks.
const uint N_QK = STAGE == 0u ? TT * (KS + 1u) : 1u;
shared vec4 Qs[N_QK];
shared vec4 Ks[N_QK];
const uint N_RED = STAGE == 1u ? gl_WorkGroupSize.x : 1u;
shared vec2 red[N_RED];
const uint N_P = STAGE == 2u ? TT * KL : 1u;
const uint N_MX = STAGE == 2u ? TT : 1u;
shared float Ps[N_P];
shared vec4 Vt[N_P];
shared float Mx[N_MX];

vec2 combine(vec2 a, vec2 b) {  // (max, sum of exp(x - max)) of two parts as one
  const float m = max(a.x, b.x);
  if (m == NEG_INF) return vec2(m, 0.0);
  return vec2(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

void scoresStage() {
  const uint lid = gl_LocalInvocationID.x, tx = lid % T, ty = lid / T;
  const uint bh = gl_WorkGroupID.z, b = bh / p.H, h = bh % p.H;
  const uint s0 = gl_WorkGroupID.y * TT, l0 = gl_WorkGroupID.x * TT;
  float acc[R][R];
  for (uint i = 0u; i < R; ++i)
    for (uint c = 0u; c < R; ++c) acc[i][c] = 0.0;
  for (uint j0 = 0u; j0 < p.D4; j0 += KS) {
    barrier();
    // Neighbouring invocations load neighbouring tokens: contiguous in NCHW and NC4HW4.
    for (uint e = lid; e < TT * KS; e += T * T) {
      const uint r = e % TT, j = e / TT;
      const bool inD = j0 + j < p.D4;
      Qs[r * (KS + 1u) + j] = (inD && s0 + r < p.S) ? loadQ(b, h * p.D4 + j0 + j, s0 + r) : vec4(0.0);
      Ks[r * (KS + 1u) + j] = (inD && l0 + r < p.L) ? loadK(b, h * p.D4 + j0 + j, l0 + r) : vec4(0.0);
    }
    barrier();
    for (uint j = 0u; j < KS; ++j)
      for (uint i = 0u; i < R; ++i) {
        const vec4 qv = Qs[(ty + i * T) * (KS + 1u) + j];
        for (uint c = 0u; c < R; ++c) acc[i][c] += dot(qv, Ks[(tx + c * T) * (KS + 1u) + j]);
      }
  }
  for (uint i = 0u; i < R; ++i)
    for (uint c = 0u; c < R; ++c) {
      const uint s = s0 + ty + i * T, l = l0 + tx + c * T;
      if (s >= p.S || l >= p.L) continue;
      float x = acc[i][c] * p.scale;
      if (hasMask()) x += loadMask(b, s, l);
      if (causal() && l > s) x = NEG_INF;
      scores[(bh * p.S + s) * p.L + l] = x;
    }
}

void rowsStage() {
  const uint lid = gl_LocalInvocationID.x, SWG = gl_WorkGroupSize.x;
  // The last line's spare groups leave as a whole, before any barrier.
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.BH * p.S) return;
  const uint base = row * p.L;
  vec2 ms = vec2(NEG_INF, 0.0);
  for (uint l = lid; l < p.L; l += SWG) ms = combine(ms, vec2(scores[base + l], 1.0));
  red[lid] = ms;
  barrier();
  for (uint n = SWG / 2u; n > 0u; n >>= 1u) {
    if (lid < n) red[lid] = combine(red[lid], red[lid + n]);
    barrier();
  }
  const float m = red[0].x, inv = 1.0 / red[0].y;
  if ((p.flags & 4u) != 0u) {
    for (uint l = lid; l < p.L; l += SWG) scores[base + l] = exp(scores[base + l] - m) * inv;
  } else if (lid == 0u) {
    stats[row] = vec2(m, inv);
  }
}

void pvStage() {
  const uint lid = gl_LocalInvocationID.x, tx = lid % T, ty = lid / T;
  const uint bh = gl_WorkGroupID.z, b = bh / p.H, h = bh % p.H;
  const uint s0 = gl_WorkGroupID.y * TT, j0 = gl_WorkGroupID.x * TT;
  const bool useStats = (p.flags & 8u) != 0u;
  if (useStats)
    for (uint r = lid; r < TT; r += T * T) Mx[r] = s0 + r < p.S ? stats[bh * p.S + s0 + r].x : 0.0;
  vec4 acc[R][R];
  for (uint i = 0u; i < R; ++i)
    for (uint c = 0u; c < R; ++c) acc[i][c] = vec4(0.0);
  for (uint l0 = 0u; l0 < p.L; l0 += KL) {
    barrier();  // also orders Mx's writes before the first tile's reads
    for (uint e = lid; e < TT * KL; e += T * T) {
      const uint r = e / KL, c = e % KL, s = s0 + r, l = l0 + c;
      float pr = 0.0;
      if (s < p.S && l < p.L) {
        pr = scores[(bh * p.S + s) * p.L + l];
        if (useStats) pr = exp(pr - Mx[r]);  // 1/sum is applied once per output below
      }
      Ps[r * KL + c] = pr;
    }
    for (uint e = lid; e < KL * TT; e += T * T) {
      const uint c = e % KL, j = e / KL, l = l0 + c;  // neighbouring invocations: neighbouring keys
      Vt[c * TT + j] = (l < p.L && j0 + j < p.D4) ? loadV(b, h * p.D4 + j0 + j, l) : vec4(0.0);
    }
    barrier();
    for (uint c = 0u; c < KL; ++c)
      for (uint i = 0u; i < R; ++i) {
        const float pr = Ps[(ty + i * T) * KL + c];
        for (uint jj = 0u; jj < R; ++jj) acc[i][jj] += pr * Vt[c * TT + tx + jj * T];
      }
  }
  for (uint i = 0u; i < R; ++i)
    for (uint jj = 0u; jj < R; ++jj) {
      const uint s = s0 + ty + i * T, j = j0 + tx + jj * T;
      if (s >= p.S || j >= p.D4) continue;
      storeOut(b, h * p.D4 + j, s, useStats ? acc[i][jj] * stats[bh * p.S + s].y : acc[i][jj]);
    }
}
