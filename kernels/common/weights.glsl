// The weight formats on Vulkan (issue #21), the GLSL counterpart of prelude.cl's
// sd_q8_value / sd_q4_value and the accessor generator's w_IS_F16: every parameter slot
// (matrix weights, biases, norm affine, embedding tables) is bound as a buffer of uint
// words and decoded here, so no 8-bit or 16-bit storage feature is needed and the weight
// format adds no SPIR-V module (the SFP/AFP modules serve every weight format).
//
// SD_WFMT (specialization constant 20, vulkanWeightFormat in kernels/vulkan/
// vulkan_lowering.cpp) is the op's weight format, Family::keyFormat(f).weights:
//   0 f32: one word per value (uintBitsToFloat);
//   1 f16: IEEE half, two per word, value i in the low half of word i / 2 when i is even;
//   2 q8_0, 3 q4_0: ggml blocks along each row's reduction (kernels/QUANTIZATION.md): row
//     r, column k is block r * B + k / 32 (B = ceil(K / 32)), lane k % 32; a block is the
//     f16 scale d, then 32 int8 (q8_0, 34 bytes: d * q) or 16 bytes of nibbles (q4_0, 18
//     bytes: lane j in the low nibble of byte j % 16 when j < 16, else the high one;
//     d * (q - 8)). Blocks are not word aligned (34 and 18 are 2 mod 4): bytes are read by
//     byte offset from the words, little-endian.
// Slots that are not quantizable (biases, norm affine, tables) hold f16 under q8_0/q4_0
// (slotFormat in kernels/family.h): SD_PFMT is their format.
// A tensor whose byte size is not a multiple of 4 (an odd count of halves, an odd count
// of blocks) has its last bytes in a partial word: the binding must cover that word
// (VkTensor::range rounds the bytes up to 4; kernels/README.md).
layout(constant_id = 20) const uint SD_WFMT = 0;
const uint SD_PFMT = SD_WFMT == 0u ? 0u : 1u;

// Declares buffer `Block` at binding `b` as the uint words `arr`, and its readers:
//   float name_p(uint i): element i of a parameter slot (f32, or f16 when SD_PFMT = 1);
//   float name_w(uint row, uint k, uint K): row `row`, column k of a matrix weight of
//     K columns in the op's weight format (quantizable slots only);
// name##_p and name##_w are generated per buffer because GLSL passes no buffers to
// functions.
#define SD_WEIGHT_BUFFER(b, Block, arr)                                                        \
  layout(std430, binding = b) readonly buffer Block { uint arr[]; };                          \
  float arr##_half(uint byteOff) { /* the f16 at an even byte offset */                       \
    const uint word = arr[byteOff >> 2u];                                                      \
    return unpackHalf2x16((byteOff & 2u) != 0u ? word >> 16u : word).x;                        \
  }                                                                                            \
  uint arr##_byte(uint byteOff) { return (arr[byteOff >> 2u] >> ((byteOff & 3u) * 8u)) & 255u; } \
  float arr##_p(uint i) { return SD_PFMT == 0u ? uintBitsToFloat(arr[i]) : arr##_half(i * 2u); } \
  float arr##_w(uint row, uint k, uint K) {                                                    \
    if (SD_WFMT == 0u) return uintBitsToFloat(arr[row * K + k]);                              \
    if (SD_WFMT == 1u) return arr##_half((row * K + k) * 2u);                                  \
    const uint j = k & 31u, blk = row * ((K + 31u) / 32u) + k / 32u;                          \
    if (SD_WFMT == 2u) {                                                                       \
      const uint o = blk * 34u;                                                                \
      return arr##_half(o) * float(bitfieldExtract(int(arr##_byte(o + 2u + j)), 0, 8));        \
    }                                                                                          \
    const uint o = blk * 18u, byte_ = arr##_byte(o + 2u + (j & 15u));                          \
    return arr##_half(o) * float(int(j < 16u ? (byte_ & 15u) : (byte_ >> 4u)) - 8);            \
  }
