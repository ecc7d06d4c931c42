// Shared by gemm_coopmat.comp and conv_coopmat.comp, included after their constants (BM,
// BN, WN, CN, STAGES, AT, BT, PAIRS; conv's PAIRS is 1): the one shared array both the
// staging tiles and the epilogue's C tile live in, and the C tile's layout.
// GemmFamily::coopMatLocalBytes states the same size for the host (max of the staging
// tiles and one pass of the C tile); keep the two together.
//
// As (STAGES x AT uvec4s) from 0, then Bs (STAGES x BT) from BOFF, while K is walked; then
// the C tile over both (their last reads are done by then), in NPASS passes over the
// accumulator columns: the fewest of 1, 2, 4 (dividing WN) whose share fits in the staging
// tiles' space (GEGLU's 64x64 tile: 2; a 128x128 one: 2). Pass pi holds the accumulator
// columns j in [pi * EPJ, (pi + 1) * EPJ) of every subgroup: PBN tile channels, local
// channel cl for tile channel tileChannel(cl, pi). Pair q's element (cl, tile position tl)
// at float (q * PBN + cl) * LDC + tl, columns padded by 4 floats (16-byte aligned for the
// coopmat stores, banks skewed between columns). One array because GLSL cannot alias two
// (GEGLU's 64x64 tile would need 64 KiB apart: 30720 + 34816 bytes).
const uint LDC = BM + 4u, STU = STAGES * (AT + BT);
const uint CTF = PAIRS * BN * LDC / 4u;  // the whole C tile in uvec4s
const uint NPASS = (CTF <= STU || WN == 1u) ? 1u : ((CTF <= 2u * STU || WN == 2u) ? 2u : 4u);
const uint EPJ = WN / NPASS, PBN = BN / NPASS, CTU = CTF / NPASS;
const uint SMN = STU > CTU ? STU : CTU;
const uint BOFF = STAGES * AT;  // Bs's first uvec4 (As at 0)

shared uvec4 Sm[SMN];

// The C tile's element (pair q, local channel cl of this pass, tile position tl).
float ctile(uint q, uint cl, uint tl) {
  const uint f = (q * PBN + cl) * LDC + tl;
  return uintBitsToFloat(Sm[f / 4u][f % 4u]);
}

// Pass pi's local channel cl as a tile channel: subgroup column sgn's accumulator columns
// pi * EPJ .. of CN channels each.
uint tileChannel(uint cl, uint pi) {
  const uint sgn = cl / (EPJ * CN), rest = cl % (EPJ * CN);
  return (sgn * WN + pi * EPJ) * CN + rest;
}
