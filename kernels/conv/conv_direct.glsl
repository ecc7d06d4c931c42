// The `direct` variant (conv.comp, MODE 0), conv.cl's conv_direct: each invocation
// computes CO output channels x PX output pixels of one row; the work-group's weights
// for CB input slices (4 channels each) are staged in shared memory, so every weight is
// read from global memory once per work-group and stage. Work-group WGX x WGY,
// flattened (local_size_x = WGX * WGY; invocation (lid % WGX, lid / WGX)). Dispatch
// (ceil(ceil(Wo / PX) / WGX), ceil(Ho / WGY), N * ceil(Cout / CO)).
// Included twice by conv.comp: SD_CONV_PART 0 its constants, 1 its code.
#if SD_CONV_PART == 0
layout(constant_id = 5) const uint WGX = 16;
layout(constant_id = 6) const uint CO = 8;  // a multiple of 4
layout(constant_id = 7) const uint PX = 2;
layout(constant_id = 8) const uint CB = 2;
const uint CO4 = CO / 4u;
const uint STAGE = CB * 4u;  // input channels per shared-memory stage

// The weight stage Ws [input channel][tap][output slice] (4 output channels a vec4) lives
// in conv.comp's shared pool `smem` from 0.
const uint WS_VEC4 = STAGE * KK * CO4;
#else

void convDirect() {
  const uint lid = gl_LocalInvocationIndex, tx = lid % WGX, ty = lid / WGX;
  const uint wgy = WGS / WGX;
  const uint ox0 = (gl_WorkGroupID.x * WGX + tx) * PX, oy = gl_WorkGroupID.y * wgy + ty;
  const uint coBlocks = (p.Cout + CO - 1u) / CO;
  const uint b = gl_WorkGroupID.z / coBlocks, co0 = (gl_WorkGroupID.z % coBlocks) * CO;
  vec4 acc[CO4 * PX];  // [output slice][pixel]
  [[unroll]] for (uint i = 0u; i < CO4 * PX; ++i) acc[i] = vec4(0.0);
  for (uint c0 = 0u; c0 < p.Cin; c0 += STAGE) {
    barrier();
    // Neighbouring invocations read neighbouring (channel, tap) of one output channel:
    // w is [Cout][Cin][KK], so they read consecutive floats.
    for (uint e = lid; e < CO * STAGE * KK; e += WGS) {
      const uint o = e / (STAGE * KK), r = e % (STAGE * KK), ci = r / KK, t = r % KK;
      const uint co = co0 + o, c = c0 + ci;
      smem[(ci * KK + t) * CO4 + o / 4u][o & 3u] = (co < p.Cout && c < p.Cin) ? w_w(co, c * KK + t, p.Cin * KK) : 0.0;
    }
    barrier();
    const uint cEnd = min(STAGE, p.Cin - c0);
    for (uint ci = 0u; ci < cEnd; ++ci) {
      [[unroll]] for (uint ky = 0u; ky < KS; ++ky) {
        const int iy = int(oy * STRIDE + ky) - int(PAD);
        [[unroll]] for (uint kx = 0u; kx < KS; ++kx) {
          float xv[PX];
          [[unroll]] for (uint q = 0u; q < PX; ++q) xv[q] = loadX(b, c0 + ci, iy, int((ox0 + q) * STRIDE + kx) - int(PAD));
          const uint wBase = (ci * KK + ky * KS + kx) * CO4;
          [[unroll]] for (uint o = 0u; o < CO4; ++o) {
            const vec4 wv = smem[wBase + o];
            [[unroll]] for (uint q = 0u; q < PX; ++q) acc[o * PX + q] = fma(vec4(xv[q]), wv, acc[o * PX + q]);
          }
        }
      }
    }
  }
  // Rows past Ho took part in the barriers above; they store nothing.
  if (oy >= p.Ho) return;
  const uint stored = sd_stored_channels(p.layout_, p.Cout);
  [[unroll]] for (uint o = 0u; o < CO4; ++o)
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      const uint co = co0 + 4u * o + i;
      if (co >= stored) break;
      [[unroll]] for (uint q = 0u; q < PX; ++q) {
        const uint ox = ox0 + q;
        if (ox >= p.Wo) break;
        storeY(b, co, oy * p.Wo + ox, acc[o * PX + q][i]);
      }
    }
}
#endif
