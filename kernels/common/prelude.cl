// Prepended to every sdspeed program, before the generated tensor accessors.
// Helpers the accessor macros (runtime/opencl/tensor_access.cpp) expand to.

#define SD_CAT_(a, b) a##b
#define SD_CAT(a, b) SD_CAT_(a, b)

// floatN for N in {1, 2, 4, 8, 16}: SD_FLOATN(4) -> float4, SD_FLOATN(1) -> float.
#define SD_FLOAT_1 float
#define SD_FLOAT_2 float2
#define SD_FLOAT_4 float4
#define SD_FLOAT_8 float8
#define SD_FLOAT_16 float16
#define SD_FLOATN(n) SD_CAT(SD_FLOAT_, n)
// halfN likewise, for the f16-arithmetic variants (kernels/common/half_variant.h), whose
// code enables cl_khr_fp16 before using it: a macro is inert until expanded.
#define SD_H_1 half
#define SD_H_2 half2
#define SD_H_4 half4
#define SD_H_8 half8
#define SD_H_16 half16
#define SD_HALFN(n) SD_CAT(SD_H_, n)

// Vector loads/stores of n consecutive elements starting at pointer p. The f16 forms
// use the core vload_half/vstore_half built-ins: half *storage* needs no cl_khr_fp16.
#define SD_VLOAD_F32_1(p) (*(p))
#define SD_VLOAD_F32_2(p) vload2(0, p)
#define SD_VLOAD_F32_4(p) vload4(0, p)
#define SD_VLOAD_F32_8(p) vload8(0, p)
#define SD_VLOAD_F32_16(p) vload16(0, p)
#define SD_VSTORE_F32_1(v, p) (*(p) = (v))
#define SD_VSTORE_F32_2(v, p) vstore2(v, 0, p)
#define SD_VSTORE_F32_4(v, p) vstore4(v, 0, p)
#define SD_VSTORE_F32_8(v, p) vstore8(v, 0, p)
#define SD_VSTORE_F32_16(v, p) vstore16(v, 0, p)
#define SD_VLOAD_F16_1(p) vload_half(0, p)
#define SD_VLOAD_F16_2(p) vload_half2(0, p)
#define SD_VLOAD_F16_4(p) vload_half4(0, p)
#define SD_VLOAD_F16_8(p) vload_half8(0, p)
#define SD_VLOAD_F16_16(p) vload_half16(0, p)
#define SD_VSTORE_F16_1(v, p) vstore_half_rte(v, 0, p)
#define SD_VSTORE_F16_2(v, p) vstore_half2_rte(v, 0, p)
#define SD_VSTORE_F16_4(v, p) vstore_half4_rte(v, 0, p)
#define SD_VSTORE_F16_8(v, p) vstore_half8_rte(v, 0, p)
#define SD_VSTORE_F16_16(v, p) vstore_half16_rte(v, 0, p)

// One value of a quantized weight block (kernels/QUANTIZATION.md), j in 0..31: the block's
// f16 scale d (bytes 0-1; blocks are 34 or 18 bytes, so d is 2-byte aligned) times q.
// d * q is exact in f32 (11 + 8 significant bits), so the kernel reads exactly the values
// the host's dequantizer gives (the reference's weights).
inline float sd_q8_value(__global const uchar* blk, const int j) {
  return vload_half(0, (__global const half*)blk) * (float)((__global const char*)blk)[2 + j];
}
// q4_0: value j in the low nibble of byte j (j < 16), value j in the high nibble of byte
// j - 16 (j >= 16); stored as q + 8.
inline float sd_q4_value(__global const uchar* blk, const int j) {
  const uchar b = blk[2 + (j & 15)];
  return vload_half(0, (__global const half*)blk) * (float)((j < 16 ? (b & 15) : (b >> 4)) - 8);
}

// Element i of a float4 with a run-time i.
inline float sd_lane(float4 v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

// Zero the lanes of a slice past the tensor's last channel (NC4HW4 padding).
inline float4 sd_mask_pad(float4 v, int s, int C) {
  int valid = C - 4 * s;
  if (valid < 4) {
    if (valid < 4) v.w = 0.0f;
    if (valid < 3) v.z = 0.0f;
    if (valid < 2) v.y = 0.0f;
  }
  return v;
}

__constant sampler_t sd_sampler = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;

// Horizontal sums of floatN, one name per width (OpenCL C has no overloading).
inline float sd_hsum1(float v) { return v; }
inline float sd_hsum2(float2 v) { return v.s0 + v.s1; }
inline float sd_hsum4(float4 v) { return (v.s0 + v.s1) + (v.s2 + v.s3); }
inline float sd_hsum8(float8 v) { return sd_hsum4(v.lo + v.hi); }
inline float sd_hsum16(float16 v) { return sd_hsum8(v.lo + v.hi); }
#define SD_HSUM(n) SD_CAT(sd_hsum, n)

// Sum of v over a work-group of n items (1-D); every item gets the total. A radix-8
// tree: log8(WG) barriers instead of log2(WG), which matters for short kernels.
// Within a level, item i reads buf[i + k * active] and writes only buf[i]; every
// index another item reads is >= active, so reads and writes never overlap.
inline float2 sd_reduce2(float2 v, __local float2* buf, const int n_items) {
  const int lid = get_local_id(0);
  buf[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int n = n_items; n > 1;) {
    const int active = (n + 7) / 8;
    if (lid < active) {
      float2 t = buf[lid];
      for (int k = 1; k < 8; ++k)
        if (lid + k * active < n) t += buf[lid + k * active];
      buf[lid] = t;
    }
    n = active;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float2 total = buf[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // buf is reused right after
  return total;
}

// A scratch or derived-weights argument: a memory object and an element offset into it
// (the executor places ops' scratch in its activation arena; a standalone op passes its
// own buffer at offset 0). SD_REGION(T, X) in the parameter list; the kernel body starts
// with `__global T* X = SD_AT(X);`.
#define SD_REGION(T, X) __global T* X##_region, const uint X##_off
#define SD_AT(X) (X##_region + X##_off)
