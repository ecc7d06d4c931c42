#include "runtime/opencl/tensor_access.h"

#include <sstream>

#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

const char* kLanes[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
                        "s8", "s9", "sa", "sb", "sc", "sd", "se", "sf"};

// "(floatN)(LOAD(n,c,hw), LOAD(n,c,(hw)+1), ...)": VEC scalar loads where the
// layout does not make consecutive hw positions contiguous.
std::string gatheredLoad(const std::string& X, int vec) {
  if (vec == 1) return X + "_LOAD(n, c, hw)";
  std::ostringstream s;
  s << "((SD_FLOATN(" << vec << "))(";
  for (int i = 0; i < vec; ++i) s << (i ? ", " : "") << X << "_LOAD(n, c, (hw) + " << i << ")";
  s << "))";
  return s.str();
}

std::string scatteredStore(const std::string& X, int vec) {
  if (vec == 1) return X + "_STORE(n, c, hw, v)";
  std::ostringstream s;
  s << "do { SD_FLOATN(" << vec << ") sd_v_ = (v); ";
  for (int i = 0; i < vec; ++i) s << X << "_STORE(n, c, (hw) + " << i << ", sd_v_." << kLanes[i] << "); ";
  s << "} while (0)";
  return s.str();
}

// A weight in ggml's q8_0 / q4_0 blocks (kernels/QUANTIZATION.md): row n (an output
// channel) is X_BPR blocks of X_QBYTES bytes, its values k = c * HW + hw in order, the
// tail of the last block zero. X_data is the first byte; X_OFF counts bytes. Read only.
std::string quantizedAccessors(const std::string& X, const StorageFormat& f, Access access, int vec) {
  if (access != Access::Read || f.storage != Storage::Buffer || f.layout != Layout::NCHW)
    throw Error("a " + std::string(dtypeName(f.dtype)) + " tensor (" + X + ") can only be read, as an NCHW buffer");
  const bool q8 = f.dtype == DType::Q8_0;
  std::ostringstream o;
  o << "// tensor " << X << ": " << dtypeName(f.dtype) << " blocks (" << (q8 ? "q8_0" : "q4_0") << "), read\n";
  o << "#define " << X << "_SLICES ((" << X << "_C + 3) >> 2)\n";
  o << "#define " << X << "_IS_F16 0\n#define " << X << "_IS_IMAGE 0\n";
  o << "#define " << X << "_IS_Q8 " << (q8 ? 1 : 0) << "\n#define " << X << "_IS_Q4 " << (q8 ? 0 : 1) << "\n";
  o << "#define " << X << "_STORED_C " << X << "_C\n";
  o << "#define " << X << "_PARAMS __global const uchar* " << X << "_base, const int " << X << "_C, const int " << X
    << "_HW, const int " << X << "_W, const uint " << X << "_OFF\n";
  o << "#define " << X << "_ARGS " << X << "_base, " << X << "_C, " << X << "_HW, " << X << "_W, " << X << "_OFF\n";
  o << "#define " << X << "_data (" << X << "_base + " << X << "_OFF)\n";
  o << "#define " << X << "_QBYTES " << (q8 ? 34 : 18) << "\n";
  o << "#define " << X << "_BPR ((" << X << "_C * " << X << "_HW + 31) >> 5)\n";
  // The block holding value k of row n.
  o << "#define " << X << "_BLOCK(n, k) (" << X << "_data + ((size_t)(n) * " << X << "_BPR + ((k) >> 5)) * " << X
    << "_QBYTES)\n";
  o << "#define " << X << "_LOAD(n, c, hw) " << (q8 ? "sd_q8_value" : "sd_q4_value") << "(" << X << "_BLOCK(n, (c) * "
    << X << "_HW + (hw)), ((c) * " << X << "_HW + (hw)) & 31)\n";
  o << "#define " << X << "_LOADC(n, c, hw) ((c) < " << X << "_C ? " << X << "_LOAD(n, c, hw) : 0.0f)\n";
  o << "#define " << X << "_LOAD4(n, s, hw) ((float4)(" << X << "_LOAD(n, 4 * (s), hw), " << X
    << "_LOADC(n, 4 * (s) + 1, hw), " << X << "_LOADC(n, 4 * (s) + 2, hw), " << X << "_LOADC(n, 4 * (s) + 3, hw)))\n";
  o << "#define " << X << "_LOADV(n, c, hw) " << gatheredLoad(X, vec) << "\n";
  return o.str();
}

}  // namespace

std::string tensorAccessors(const std::string& X, const StorageFormat& f, Access access, int vec) {
  if (vec != 1 && vec != 2 && vec != 4 && vec != 8 && vec != 16)
    throw Error("vector width " + std::to_string(vec) + " is not one of 1, 2, 4, 8, 16");
  if (isQuantized(f.dtype)) return quantizedAccessors(X, f, access, vec);
  const bool f32 = f.dtype == DType::F32;
  const std::string T = f32 ? "float" : "half";
  const std::string VL = f32 ? "SD_VLOAD_F32_" : "SD_VLOAD_F16_";
  const std::string VS = f32 ? "SD_VSTORE_F32_" : "SD_VSTORE_F16_";
  const std::string v = std::to_string(vec);
  std::ostringstream o;
  o << "// tensor " << X << ": " << f.name() << (access == Access::Read ? ", read" : ", write")
    << ", VEC " << vec << "\n";
  o << "#define " << X << "_SLICES ((" << X << "_C + 3) >> 2)\n";
  // Lets a kernel pick a dtype-specific fast path (GEMM's aligned float4 weight load).
  o << "#define " << X << "_IS_F16 " << (f32 ? 0 : 1) << "\n";
  o << "#define " << X << "_IS_Q8 0\n#define " << X << "_IS_Q4 0\n";
  o << "#define " << X << "_IS_IMAGE " << (f.storage == Storage::Image2D ? 1 : 0) << "\n";
  // Channels the storage holds: C, or C rounded up to whole slices (NC4HW4 padding).
  o << "#define " << X << "_STORED_C " << (f.layout == Layout::NC4HW4 ? "(" + X + "_SLICES * 4)" : X + "_C")
    << "\n";

  if (f.storage == Storage::Image2D) {
    o << "#define " << X << "_PARAMS " << (access == Access::Read ? "__read_only" : "__write_only")
      << " image2d_t " << X << "_img, const int " << X << "_C, const int " << X
      << "_HW, const int " << X << "_W\n";
    o << "#define " << X << "_ARGS " << X << "_img, " << X << "_C, " << X << "_HW, " << X << "_W\n";
    o << "#define " << X << "_COORD(n, s, hw) ((int2)((hw) % " << X << "_W, ((n) * " << X
      << "_SLICES + (s)) * (" << X << "_HW / " << X << "_W) + (hw) / " << X << "_W))\n";
    if (access == Access::Read) {
      o << "#define " << X << "_LOAD4(n, s, hw) read_imagef(" << X << "_img, sd_sampler, " << X
        << "_COORD(n, s, hw))\n";
      o << "#define " << X << "_LOAD(n, c, hw) sd_lane(" << X << "_LOAD4(n, (c) >> 2, hw), (c) & 3)\n";
      o << "#define " << X << "_LOADV(n, c, hw) " << gatheredLoad(X, vec) << "\n";
    } else {
      o << "#define " << X << "_STORE4(n, s, hw, v) write_imagef(" << X << "_img, " << X
        << "_COORD(n, s, hw), sd_mask_pad(v, s, " << X << "_C))\n";
      // No single-channel store into an RGBA texel: using one is a compile error.
      o << "#define " << X << "_STORE(n, c, hw, v) sdspeed_error_single_channel_store_into_image\n";
      o << "#define " << X << "_STOREV(n, c, hw, v) sdspeed_error_single_channel_store_into_image\n";
    }
    return o.str();
  }

  // A buffer tensor is a memory object and an element offset into it: the executor
  // places every planned tensor in one arena and passes its offset, instead of a
  // sub-buffer per tensor (sub-buffers cost NVIDIA's driver time per launch; see
  // README "The planner costs nothing"). X_data is the tensor's first element.
  o << "#define " << X << "_PARAMS __global " << (access == Access::Read ? "const " : "") << T
    << "* " << X << "_base, const int " << X << "_C, const int " << X << "_HW, const int " << X
    << "_W, const uint " << X << "_OFF\n";
  o << "#define " << X << "_ARGS " << X << "_base, " << X << "_C, " << X << "_HW, " << X << "_W, " << X
    << "_OFF\n";
  o << "#define " << X << "_data (" << X << "_base + " << X << "_OFF)\n";
  if (f.layout == Layout::NCHW) {
    o << "#define " << X << "_IDX(n, c, hw) (((size_t)(n) * " << X << "_C + (c)) * " << X
      << "_HW + (hw))\n";
  } else {
    o << "#define " << X << "_IDX(n, c, hw) (((((size_t)(n) * " << X << "_SLICES + ((c) >> 2)) * "
      << X << "_HW + (hw)) << 2) + ((c) & 3))\n";
  }
  o << "#define " << X << "_LOAD(n, c, hw) " << VL << "1(" << X << "_data + " << X
    << "_IDX(n, c, hw))\n";
  if (f.layout == Layout::NCHW) {
    o << "#define " << X << "_LOADC(n, c, hw) ((c) < " << X << "_C ? " << X
      << "_LOAD(n, c, hw) : 0.0f)\n";
    o << "#define " << X << "_LOAD4(n, s, hw) ((float4)(" << X << "_LOAD(n, 4 * (s), hw), " << X
      << "_LOADC(n, 4 * (s) + 1, hw), " << X << "_LOADC(n, 4 * (s) + 2, hw), " << X
      << "_LOADC(n, 4 * (s) + 3, hw)))\n";
    o << "#define " << X << "_LOADV(n, c, hw) " << VL << v << "(" << X << "_data + " << X
      << "_IDX(n, c, hw))\n";
  } else {
    o << "#define " << X << "_LOAD4(n, s, hw) " << VL << "4(" << X << "_data + " << X
      << "_IDX(n, 4 * (s), hw))\n";
    o << "#define " << X << "_LOADV(n, c, hw) " << gatheredLoad(X, vec) << "\n";
  }
  if (access == Access::Write) {
    o << "#define " << X << "_STORE(n, c, hw, v) " << VS << "1(v, " << X << "_data + " << X
      << "_IDX(n, c, hw))\n";
    if (f.layout == Layout::NCHW) {
      o << "#define " << X << "_STORE4(n, s, hw, v) do { float4 sd_q_ = (v); int sd_c_ = 4 * (s); "
        << X << "_STORE(n, sd_c_, hw, sd_q_.x); "
        << "if (sd_c_ + 1 < " << X << "_C) " << X << "_STORE(n, sd_c_ + 1, hw, sd_q_.y); "
        << "if (sd_c_ + 2 < " << X << "_C) " << X << "_STORE(n, sd_c_ + 2, hw, sd_q_.z); "
        << "if (sd_c_ + 3 < " << X << "_C) " << X << "_STORE(n, sd_c_ + 3, hw, sd_q_.w); } while (0)\n";
      o << "#define " << X << "_STOREV(n, c, hw, v) " << VS << v << "(v, " << X << "_data + " << X
        << "_IDX(n, c, hw))\n";
    } else {
      o << "#define " << X << "_STORE4(n, s, hw, v) " << VS << "4(sd_mask_pad(v, s, " << X
        << "_C), " << X << "_data + " << X << "_IDX(n, 4 * (s), hw))\n";
      o << "#define " << X << "_STOREV(n, c, hw, v) " << scatteredStore(X, vec) << "\n";
    }
  }
  return o.str();
}

}  // namespace sdspeed
