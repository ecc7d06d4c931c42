// STAGE 2 of conv_winograd.comp: per plane b (of ALPHA^2),
//   M[b](m, n) = sum_k U[b](k, m) V[b](k, n),  U [Cin][NB], V [Cin][TP], M [NB][TP]
// (k the input channel, m the block's output channel, n the tile). conv.cl's conv_gemm
// laid out as conv_gemm.glsl lays it: work-group tile TM x TN, KT deep per shared-memory
// stage; each invocation holds an RM x RN register tile as vec4s, RM / 4 groups of 4
// channels at m0 + 4 * (g * WY + ty) and RN / 4 groups of 4 tiles at n0 + 4 * (j * WX +
// tx); the next stage is read into registers before this stage's products (register
// prefetch). Both operands are read with invocations along their contiguous dimension
// (channels of U, tiles of V) and stored to shared memory the same way, so A's tile needs
// no row pad here (conv_gemm.glsl's APAD: its weights are read along k). Shared memory is
// KT * (TM + TN) floats, the family's localMemBytes. Dispatch (ceil(TP / TN),
// ceil(NB / TM), ALPHA^2).
const uint WX = TN / RN, WY = TM / RM;  // WX * WY = WGS for the GEMM's pipeline
const uint RN4 = RN / 4u, TM4 = TM / 4u, TN4 = TN / 4u, BS0 = KT * TM4;
shared vec4 smem[STAGE == 2u ? BS0 + KT * TN4 : 1u];  // As [kk][channel group], then Bs [kk][tile group]
const uint ACNT = (KT * TM + WGS - 1u) / WGS, BCNT = (KT * TN + WGS - 1u) / WGS;  // values per invocation and stage
float aReg[ACNT];
float bReg[BCNT];

// Reads stage k0 of U (from word aBase) and V (from bBase) into aReg and bReg; zeros past
// Cin, NB and TP.
void fetchStage(uint k0, uint lid, uint aBase, uint bBase, uint m0, uint n0) {
  [[unroll]] for (uint i = 0u; i < ACNT; ++i) {
    const uint e = lid + i * WGS, m = e % TM, k = k0 + e / TM;
    const bool ok = all(bvec3(e < KT * TM, k < p.Cin, m0 + m < p.NB));  // branch-free: SD_GUARD, prelude.glsl
    const uint at = aBase + k * p.NB + m0 + m;
    const float v = u[SD_GUARD(ok, at)];
    aReg[i] = ok ? v : 0.0;
  }
  [[unroll]] for (uint i = 0u; i < BCNT; ++i) {
    const uint e = lid + i * WGS, n = e % TN, k = k0 + e / TN;
    const bool ok = all(bvec3(e < KT * TN, k < p.Cin, n0 + n < p.TP));
    const uint at = bBase + k * p.TP + n0 + n;
    const float v = planes[SD_GUARD(ok, at)];
    bReg[i] = ok ? v : 0.0;
  }
}

void winoGemm() {
  const uint lid = gl_LocalInvocationIndex, tx = lid % WX, ty = lid / WX;
  const uint b = gl_WorkGroupID.z, m0 = gl_WorkGroupID.y * TM, n0 = gl_WorkGroupID.x * TN;
  const uint aBase = b * p.Cin * p.NB, bBase = b * p.Cin * p.TP;
  vec4 acc[RM * RN4];  // [channel][tile group]
  [[unroll]] for (uint i = 0u; i < RM * RN4; ++i) acc[i] = vec4(0.0);
  fetchStage(0u, lid, aBase, bBase, m0, n0);
  for (uint k0 = 0u; k0 < p.Cin; k0 += KT) {
    barrier();  // the previous stage's products are done with the tiles
    [[unroll]] for (uint i = 0u; i < ACNT; ++i) {
      const uint e = lid + i * WGS, m = e % TM;
      if (e < KT * TM) smem[(e / TM) * TM4 + m / 4u][m & 3u] = aReg[i];
    }
    [[unroll]] for (uint i = 0u; i < BCNT; ++i) {
      const uint e = lid + i * WGS, n = e % TN;
      if (e < KT * TN) smem[BS0 + (e / TN) * TN4 + n / 4u][n & 3u] = bReg[i];
    }
    barrier();
    if (k0 + KT < p.Cin) fetchStage(k0 + KT, lid, aBase, bBase, m0, n0);
    [[unroll]] for (uint kk = 0u; kk < KT; ++kk) {
      vec4 bv[RN4];
      [[unroll]] for (uint j = 0u; j < RN4; ++j) bv[j] = smem[BS0 + kk * TN4 + j * WX + tx];
      [[unroll]] for (uint g = 0u; g < RM / 4u; ++g) {
        const vec4 av = smem[kk * TM4 + g * WY + ty];
        [[unroll]] for (uint j = 0u; j < RN4; ++j) {
          acc[(4u * g) * RN4 + j] = fma(vec4(av.x), bv[j], acc[(4u * g) * RN4 + j]);
          acc[(4u * g + 1u) * RN4 + j] = fma(vec4(av.y), bv[j], acc[(4u * g + 1u) * RN4 + j]);
          acc[(4u * g + 2u) * RN4 + j] = fma(vec4(av.z), bv[j], acc[(4u * g + 2u) * RN4 + j]);
          acc[(4u * g + 3u) * RN4 + j] = fma(vec4(av.w), bv[j], acc[(4u * g + 3u) * RN4 + j]);
        }
      }
    }
  }
  // M's rows are whole groups of 4 (NB is a multiple of 4), its columns whole vec4s (TP).
  [[unroll]] for (uint g = 0u; g < RM / 4u; ++g) {
    const uint m = m0 + 4u * (g * WY + ty);
    if (m >= p.NB) break;
    [[unroll]] for (uint j = 0u; j < RN4; ++j) {
      const uint n = n0 + 4u * (j * WX + tx);
      if (n >= p.TP) continue;
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        const uint o = p.mOff + (b * p.NB + m + i) * p.TP + n;
        const vec4 a = acc[(4u * g + i) * RN4 + j];
        planes[o] = a.x;
        planes[o + 1u] = a.y;
        planes[o + 2u] = a.z;
        planes[o + 3u] = a.w;
      }
    }
  }
}
