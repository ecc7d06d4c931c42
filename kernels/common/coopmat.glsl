// Shared by the cooperative-matrix shaders (gemm_coopmat.comp, conv_coopmat.comp): the
// extensions of VK_NV_cooperative_matrix and which subgroup an invocation is in, or, with
// COOPMAT_EMULATE = 1 (their *_emu modules, tests only), 32 consecutive invocations as a
// "subgroup" for the scalar code that stands in for the coopmat operations (each lane
// holding accumulator elements lane + 32 r: row e % CM, column e / CM). Include before
// prelude.glsl; the includer declares GL_EXT_shader_explicit_arithmetic_types_float16.
#if COOPMAT_EMULATE
#define SG_ID (gl_LocalInvocationIndex / 32u)
#define SG_LANE (gl_LocalInvocationIndex % 32u)
#else
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#define SG_ID gl_SubgroupID
#define SG_LANE gl_SubgroupInvocationID
#endif
