// `im2col_gemm` and `conv1x1` (conv.comp, MODE 1): an implicit GEMM, per sample b
//   Y[b](co, n) = sum_k W(co, k) B[b](k, n),  k = ci * KK + ky * KS + kx,  n = oy * Wo + ox,
// with W the weights as they are ([Cout][Cin * KK], row-major) and B[b] the im2col
// columns of x gathered on the fly into shared memory, never written out. So on Vulkan
// im2col_gemm needs no scratch and no packed weights (the OpenCL variant's col buffer
// and Wt); conv1x1 is the same kernel with KS = 1 (its gather is a plain read of x).
// Work-group tile TM x TN, KT deep per shared-memory stage; each invocation holds an
// RM x RN register tile as vec4s: RM / 4 groups of 4 channels at m0 + 4 * (g * WY + ty)
// and RN / 4 groups of 4 positions at n0 + 4 * (j * WX + tx), as conv.cl's conv_gemm
// lays them (neighbouring invocations read neighbouring vec4s of B's tile; all of a
// row of the work-group read the same vec4 of A's). Dispatch (ceil(Ho * Wo / TN),
// ceil(stored channels / TM), N).
// In the f16-arithmetic modules (im2col_gemm_f16, conv1x1_f16) the products and their sum
// over one KT stage (KT products per output) are f16vec4 FMAs on the shared tiles
// converted when read, and each stage's sum joins the float accumulator: GEMM
// direct_f16's scheme (gemm.cl says why), so the error stays ~u of the output at every
// K = Cin KS KS. The tiles stay float in shared memory (the pool is shared with
// conv_direct.glsl, which is float), the epilogue adds in float (storeY).
// Included twice by conv.comp: SD_CONV_PART 0 its constants, 1 its code.
#if SD_CONV_PART == 0
layout(constant_id = 9) const uint TM = 64;
layout(constant_id = 10) const uint TN = 64;
layout(constant_id = 11) const uint RM = 8;
layout(constant_id = 12) const uint RN = 4;
layout(constant_id = 13) const uint KT = 16;
// 1 pads each row of A's tile by a vec4: A is stored one k per invocation (coalesced
// reads along a weight row), so without it a warp's stores hit one bank per column.
// 0 where the device's shared memory cannot hold the pad (conv_vulkan.cpp decides).
layout(constant_id = 14) const uint APAD = 1;
const uint WX = TN / RN, WY = TM / RM;  // WX * WY = WGS
const uint RN4 = RN / 4u, AROW = TM / 4u + APAD, TN4 = TN / 4u;
// Gathering B: NT invocations per row of the tile, CPT columns each, rows RSTEP apart.
const uint NT = WGS < TN ? WGS : TN;
const uint CPT = TN / NT, RSTEP = WGS / NT;

// The tiles in conv.comp's shared pool `smem`: As [kk][channel group] = W(m0 + 4 g .. 4 g + 3,
// k0 + kk) from 0, Bs [kk][position group] = B(k0 + kk, n0 + 4 j .. 4 j + 3) from BS0.
const uint BS0 = KT * AROW, TILES_VEC4 = BS0 + KT * TN4;
#else

// Register prefetch: the next stage's weights and x values are read from global memory
// into registers before this stage's products, and stored to shared memory after them,
// so the loads' latency overlaps the arithmetic (one stage of tiles in shared memory).
const uint ACNT = (KT * TM + WGS - 1u) / WGS;       // A values per invocation and stage
const uint BROWS = (KT + RSTEP - 1u) / RSTEP;       // B rows per invocation and stage
float aReg[ACNT];
float bReg[BROWS * CPT];

// Reads stage k0 of W (invocations along k: a weight row is contiguous) and of the im2col
// columns B into aReg and bReg; zeros past K, Cout and the image.
void fetchStage(uint k0, uint lid, uint b, uint m0, uint K, uint row0, int iy0[CPT], int ix0[CPT]) {
  [[unroll]] for (uint i = 0u; i < ACNT; ++i) {
    const uint e = lid + i * WGS, kk = e % KT, m = e / KT, k = k0 + kk, co = m0 + m;
    const bool ok = all(bvec3(e < KT * TM, k < K, co < p.Cout));  // branch-free: SD_GUARD, prelude.glsl
    const float v = w_w(SD_GUARD(ok, co), SD_GUARD(ok, k), K);
    aReg[i] = ok ? v : 0.0;
  }
  [[unroll]] for (uint r = 0u; r < BROWS; ++r) {
    const uint kk = row0 + r * RSTEP, k = k0 + kk, ci = k / KK, t = k - ci * KK, ky = t / KS, kx = t - ky * KS;
    [[unroll]] for (uint c = 0u; c < CPT; ++c)
      bReg[r * CPT + c] = loadXGuarded(all(bvec2(kk < KT, k < K)), b, ci, iy0[c] + int(ky), ix0[c] + int(kx));
  }
}

void convGemm() {
  const uint lid = gl_LocalInvocationIndex, tx = lid % WX, ty = lid / WX;
  const uint b = gl_WorkGroupID.z, m0 = gl_WorkGroupID.y * TM, n0 = gl_WorkGroupID.x * TN;
  const uint HoWo = p.Ho * p.Wo, K = p.Cin * KK;
  // This invocation's gather columns are the same in every stage: their window origins
  // are computed once (the one division by the pushed Wo).
  const uint col0 = lid % NT, row0 = lid / NT;
  int iy0[CPT], ix0[CPT];
  [[unroll]] for (uint c = 0u; c < CPT; ++c) {
    const uint n = n0 + col0 + c * NT, oy = n / p.Wo, ox = n - oy * p.Wo;
    // Columns past Ho * Wo get an origin no window reaches (they read zeros).
    iy0[c] = n < HoWo ? int(oy * STRIDE) - int(PAD) : -int(KS) - 1;
    ix0[c] = int(ox * STRIDE) - int(PAD);
  }
  vec4 acc[RM * RN4];  // [channel][position group]
  [[unroll]] for (uint i = 0u; i < RM * RN4; ++i) acc[i] = vec4(0.0);
  fetchStage(0u, lid, b, m0, K, row0, iy0, ix0);
  for (uint k0 = 0u; k0 < K; k0 += KT) {
    barrier();  // the previous stage's products are done with the tiles
    [[unroll]] for (uint i = 0u; i < ACNT; ++i) {
      const uint e = lid + i * WGS, kk = e % KT, m = e / KT;
      if (e < KT * TM) smem[kk * AROW + m / 4u][m & 3u] = aReg[i];
    }
    [[unroll]] for (uint r = 0u; r < BROWS; ++r) {
      const uint kk = row0 + r * RSTEP;
      [[unroll]] for (uint c = 0u; c < CPT; ++c) {
        const uint nl = col0 + c * NT;
        if (kk < KT) smem[BS0 + kk * TN4 + nl / 4u][nl & 3u] = bReg[r * CPT + c];
      }
    }
    barrier();
    if (k0 + KT < K) fetchStage(k0 + KT, lid, b, m0, K, row0, iy0, ix0);
#if AFP_F16
    f16vec4 part[RM * RN4];  // this stage's sums, in half
    [[unroll]] for (uint i = 0u; i < RM * RN4; ++i) part[i] = f16vec4(0.0);
#define SD_CONV_V4 f16vec4
#define SD_CONV_ACC part
#else
#define SD_CONV_V4 vec4
#define SD_CONV_ACC acc
#endif
    [[unroll]] for (uint kk = 0u; kk < KT; ++kk) {
      SD_CONV_V4 bv[RN4];
      [[unroll]] for (uint j = 0u; j < RN4; ++j) bv[j] = SD_CONV_V4(smem[BS0 + kk * TN4 + j * WX + tx]);
      [[unroll]] for (uint g = 0u; g < RM / 4u; ++g) {
        const SD_CONV_V4 av = SD_CONV_V4(smem[kk * AROW + g * WY + ty]);
        [[unroll]] for (uint j = 0u; j < RN4; ++j) {
          SD_CONV_ACC[(4u * g) * RN4 + j] = fma(SD_CONV_V4(av.x), bv[j], SD_CONV_ACC[(4u * g) * RN4 + j]);
          SD_CONV_ACC[(4u * g + 1u) * RN4 + j] = fma(SD_CONV_V4(av.y), bv[j], SD_CONV_ACC[(4u * g + 1u) * RN4 + j]);
          SD_CONV_ACC[(4u * g + 2u) * RN4 + j] = fma(SD_CONV_V4(av.z), bv[j], SD_CONV_ACC[(4u * g + 2u) * RN4 + j]);
          SD_CONV_ACC[(4u * g + 3u) * RN4 + j] = fma(SD_CONV_V4(av.w), bv[j], SD_CONV_ACC[(4u * g + 3u) * RN4 + j]);
        }
      }
    }
#if AFP_F16
    [[unroll]] for (uint i = 0u; i < RM * RN4; ++i) acc[i] += vec4(part[i]);
#endif
#undef SD_CONV_V4
#undef SD_CONV_ACC
  }
  const uint stored = sd_stored_channels(p.layout_, p.Cout);
  [[unroll]] for (uint g = 0u; g < RM / 4u; ++g)
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      const uint co = m0 + 4u * (g * WY + ty) + i;
      if (co >= stored) break;
      [[unroll]] for (uint j = 0u; j < RN4; ++j)
        [[unroll]] for (uint q = 0u; q < 4u; ++q) {
          const uint n = n0 + 4u * (j * WX + tx) + q;
          if (n < HoWo) storeY(b, co, n, acc[(4u * g + i) * RN4 + j][q]);
        }
    }
}
#endif
