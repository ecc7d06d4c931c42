// Included first by every sdspeed GLSL compute shader (kernels/<family>/*.comp), the
// Vulkan counterpart of prelude.cl. Build-time variants (cmake: sdspeed_add_spirv
// DEFINES), after ncnn's naming:
//   SFP_F16 = 1: tensors are stored as float16_t (16-bit storage), else float;
//   AFP_F16 = 1: the shader computes in float16_t (f16 arithmetic), else float.
// Layouts are a push constant (the same module serves NCHW and NC4HW4 buffers).
// [[unroll]] on the loops whose trip counts are specialization or compile-time constants
// (the tile loops of the GEMM, convolution and attention shaders). On an H100 without it
// (results/vulkan/h100/README.md) op times grew with K at about one memory latency per
// element each invocation stages, as if the staging loops stayed rolled and their private
// arrays went to local memory, so that each global load waited for the previous one.
#extension GL_EXT_control_flow_attributes : require
#if SFP_F16
#extension GL_EXT_shader_16bit_storage : require
#define sfp float16_t
#define sfp4 f16vec4
#else
#define sfp float
#define sfp4 vec4
#endif
#if AFP_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define afp float16_t
#define afp4 f16vec4
#else
#define afp float
#define afp4 vec4
#endif
// Whatever the arithmetic type, reductions (sums, statistics, softmax's max and sum) stay
// float in every shader: half's 11 bits would lose a sum of thousands of terms.

const uint SD_NCHW = 0u;
const uint SD_NC4HW4 = 1u;

// Physical element index of logical (n, c, hw) in a tensor of C channels and HW
// positions, as runtime/tensor_desc.h lays it out: NCHW, or NC4HW4 (slices of 4
// channels, the 4 lanes innermost; lanes past C are padding, kept zero).
// Branch-free (both indices computed, one selected): a branch here would put every
// guarded load of a staging loop in its own control-flow region (see SD_GUARD below).
uint sd_index(uint layout_, uint n, uint c, uint hw, uint C, uint HW) {
  const uint nchw = (n * C + c) * HW + hw;
  const uint S = (C + 3u) / 4u;
  const uint nc4 = ((n * S + c / 4u) * HW + hw) * 4u + (c & 3u);
  return layout_ == SD_NCHW ? nchw : nc4;
}

// Guarded loads of the staging loops, without branches: the load's coordinates are
// replaced by SD_GUARD(ok, v) = (ok ? v : 0) (element 0 exists in every bound buffer) and
// the loaded value by the same select, so every load of an unrolled loop is issued
// unconditionally and the loads of one step can all be in flight at once. Written
// `cond ? load : 0`, glslang makes each load a branch whose merge uses the value; on an
// H200 (results/vulkan/h200/loads-before/README.md) a step then cost about one memory
// latency per staged element; unconditional loads made the coopmat GEMM 2.7x to 6.6x
// faster on an H100 (results/vulkan/h100/loads/README.md). `ok` is built with all(bvec..)
// rather than &&, which glslang also lowers to branches. glslang makes `?:` an OpSelect
// only when both sides are plain values: pass SD_GUARD a named value or a constant, not
// an expression (`pair * F + o` gave a branch and a merge again).
#define SD_GUARD(ok, v) ((ok) ? (v) : 0u)

// NC4HW4: the lanes of slice s (channels 4s .. 4s + 3) that lie in [c0, c1).
bvec4 sd_slice_lanes(uint s, uint c0, uint c1) {
  const uvec4 c = uvec4(4u * s) + uvec4(0u, 1u, 2u, 3u);
  return bvec4(uvec4(greaterThanEqual(c, uvec4(c0))) * uvec4(lessThan(c, uvec4(c1))));
}

// Channels a layout stores per sample: C, or C rounded up to whole slices.
uint sd_stored_channels(uint layout_, uint C) { return layout_ == SD_NCHW ? C : (C + 3u) / 4u * 4u; }
