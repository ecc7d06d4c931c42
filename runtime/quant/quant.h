// Weight quantization in ggml's block formats, on the CPU, with no GPU API
// (kernels/QUANTIZATION.md: the formats, sdspeed's blocking rule and why).
//   q8_0 (sdspeed's `int8`): 32 weights -> one f16 scale d = max|x| / 127 and 32
//     int8 q = round(x / d); x ~ d q. 34 bytes per block, 8.5 bits per weight.
//   q4_0 (sdspeed's `int4`): 32 weights -> one f16 scale d = m / -8, m the weight of
//     largest magnitude (its sign kept), and 32 4-bit q = min(15, trunc(x / d + 8.5));
//     x ~ d (q - 8). Weight j sits in the low nibble of byte j, weight j + 16 in the
//     high nibble. 18 bytes per block, 4.5 bits per weight.
// quantizeBlocks follows ggml's reference quantizers (quantize_row_q8_0_ref /
// quantize_row_q4_0_ref in ggml's src/ggml-quants.c) bit for bit: the scale and its
// reciprocal in f32, ties of round() away from zero, the f16 scale rounded to nearest
// even, the q4 values from the f32 reciprocal (not from the rounded f16 scale).
// tests/test_quant.cpp checks it against bytes gguf-py's quantizer wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sdspeed::quant {

enum class Format { Q8_0, Q4_0 };

inline constexpr int kBlock = 32;  // weights per block, both formats (the format's, not a tuning parameter)

size_t blockBytes(Format f);         // 34 (q8_0) or 18 (q4_0)
const char* formatName(Format f);    // "q8_0", "q4_0" (ggml's names)
const char* sdspeedName(Format f);   // "int8", "int4" (--weights)

// IEEE binary16 bits of f, rounded to nearest even (subnormals, overflow to inf), the
// rounding ggml's GGML_FP32_TO_FP16 does; and back.
uint16_t f32ToF16(float f);
float f16ToF32(uint16_t h);

// ggml's row quantizer: n values (n % 32 == 0, all finite) -> n / 32 blocks at `out`
// (blockBytes(f) each).
void quantizeBlocks(Format f, const float* x, int64_t n, uint8_t* out);
// The inverse: n / 32 blocks -> n values (d * q, computed in f32 as ggml does).
void dequantizeBlocks(Format f, const uint8_t* blocks, int64_t n, float* out);

// sdspeed's blocking rule for a weight tensor: `rows` output channels, each with a
// contiguous reduction of `reduction` values (OIHW: I*KH*KW; a Linear [out, in]: in).
// A row is padded with zeros to whole blocks, so a block never mixes two output
// channels and every row starts on a block boundary: row r is blocks
// [r * blocksPerRow, (r + 1) * blocksPerRow). Zeros quantize to exactly 0 in both
// formats and leave a block's scale unchanged, so the padding costs bytes only.
struct MatrixLayout {
  Format format;
  int64_t rows = 0, reduction = 0;
  int64_t blocksPerRow() const { return (reduction + kBlock - 1) / kBlock; }
  size_t bytes() const { return static_cast<size_t>(rows * blocksPerRow()) * blockBytes(format); }
};

// Quantizes a row-major [rows, reduction] f32 matrix; throws Error naming `what` on a
// non-finite value or a size mismatch.
std::vector<uint8_t> quantizeMatrix(const MatrixLayout& l, const float* x, size_t count, const std::string& what);
// The values the blocks hold, [rows, reduction] (padding dropped).
std::vector<float> dequantizeMatrix(const MatrixLayout& l, const uint8_t* blocks, size_t byteCount,
                                    const std::string& what);

// The first block (of byteCount / blockBytes) whose f16 scale is NaN or infinite, or -1:
// blocks read from a file are checked before they reach a kernel.
int64_t firstNonFiniteScale(Format f, const uint8_t* blocks, size_t byteCount);

// "q8_0" / "q4_0" (also "Q8_0" / "Q4_0", GGUF's spelling) -> the format; false otherwise.
bool parseFormat(const std::string& name, Format& out);

}  // namespace sdspeed::quant
