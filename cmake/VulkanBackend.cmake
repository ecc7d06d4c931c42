# The Vulkan backend (issue #21), optional: built when the Vulkan loader and headers
# (libvulkan-dev) and glslc (Debian's glslc package, shaderc) are both found. Defines
# SDSPEED_VULKAN_FOUND for the callers, and sdspeed_add_spirv() below.
#
# Nothing is downloaded: the loader, headers and glslc are Debian packages
# (scripts/setup-debian). The default is OFF for Android and cross builds: a phone's
# libvulkan would need loading at run time as runtime/opencl/opencl_dlopen.cpp does for
# OpenCL, and the arm64 sysroot (scripts/setup-debian-arm64) has no Vulkan packages.
if(ANDROID OR CMAKE_CROSSCOMPILING)
  set(SDSPEED_VULKAN_DEFAULT OFF)
else()
  set(SDSPEED_VULKAN_DEFAULT ON)
endif()
option(SDSPEED_VULKAN "Build the Vulkan backend when the loader and glslc are found" ${SDSPEED_VULKAN_DEFAULT})

set(SDSPEED_VULKAN_FOUND OFF)
if(NOT SDSPEED_VULKAN OR NOT SDSPEED_OPENCL)
  # SDSPEED_OPENCL=OFF is the CPU-only configuration: no GPU API at all.
  return()
endif()
find_package(Vulkan QUIET)
find_program(SDSPEED_GLSLC glslc)
if(NOT Vulkan_FOUND OR NOT SDSPEED_GLSLC)
  message(STATUS "sdspeed: Vulkan backend off (needs libvulkan-dev and glslc; scripts/setup-debian installs them)")
  return()
endif()
set(SDSPEED_VULKAN_FOUND ON)
# spirv-val (spirv-tools), when present, checks every SPIR-V module the build embeds
# against the Vulkan environment it targets (glslc's own output, so a failure means a
# glslang bug or a wrong --target-env).
find_program(SDSPEED_SPIRV_VAL spirv-val)
# SPIR-V 1.3 (Vulkan 1.1): subgroup operations need it, and 1.1 is the oldest device
# API the runtime opens (runtime/vulkan/device.cpp).
set(SDSPEED_GLSLC_TARGET_ENV vulkan1.1)

# Feature-test shaders, as ggml-vulkan does: what this glslc compiles decides which
# shader variants the build can produce. Each result is a CMake variable
# SDSPEED_GLSLC_<NAME> (0/1), for choosing variants in sdspeed_add_spirv calls, and the
# same compile definition on sdspeed_vulkan (runtime/vulkan/CMakeLists.txt), for choosing
# them in C++. Whether a *device* runs them is asked at run time (device_info.h).
# Debian 12's glslang 12 compiles GL_NV_cooperative_matrix but not GL_KHR_cooperative_matrix.
set(SDSPEED_GLSLC_FEATURES "")
function(_sdspeed_glslc_feature name body)
  set(dir ${CMAKE_BINARY_DIR}/vulkan-feature-tests)
  file(WRITE ${dir}/${name}.comp "#version 450\n${body}\n")
  execute_process(COMMAND ${SDSPEED_GLSLC} --target-env=${SDSPEED_GLSLC_TARGET_ENV} -fshader-stage=compute
                          ${dir}/${name}.comp -o ${dir}/${name}.spv
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0)
    set(ok 1)
  else()
    set(ok 0)
  endif()
  set(SDSPEED_GLSLC_FEATURES ${SDSPEED_GLSLC_FEATURES} SDSPEED_GLSLC_${name}=${ok} PARENT_SCOPE)
  set(SDSPEED_GLSLC_${name} ${ok} PARENT_SCOPE)
  message(STATUS "sdspeed: glslc compiles ${name}: ${ok}")
endfunction()
_sdspeed_glslc_feature(FLOAT16_ARITHMETIC [=[
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer B { float v[]; };
void main() { float16_t h = float16_t(v[0]); v[0] = float(h * h); }]=])
_sdspeed_glslc_feature(STORAGE_16BIT [=[
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer B { float16_t h[]; };
void main() { h[0] = float16_t(float(h[1]) + 1.0); }]=])
_sdspeed_glslc_feature(SUBGROUPS [=[
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { float v[]; };
void main() { v[gl_SubgroupInvocationID] = subgroupAdd(v[gl_LocalInvocationID.x]); }]=])
_sdspeed_glslc_feature(NV_COOPERATIVE_MATRIX [=[
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer B { float16_t v[]; };
void main() {
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> m;
  coopMatLoadNV(m, v, 0, 16, false);
  coopMatStoreNV(m, v, 256, 16, false);
}]=])
_sdspeed_glslc_feature(KHR_COOPERATIVE_MATRIX [=[
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer B { float16_t v[]; };
void main() {
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> m;
  coopMatLoad(m, v, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  coopMatStore(m, v, 256, 16, gl_CooperativeMatrixLayoutRowMajor);
}]=])

# sdspeed_add_spirv(<target> NAME <symbol> SOURCE <file.comp> [DEFINES NAME=VALUE...])
# Compiles SOURCE with glslc at build time (the -D variants as DEFINES) and adds to
# <target> a generated C++ file defining `const sdspeed::vk::SpirvShader
# sdspeed::vk::shaders::<symbol>` (runtime/vulkan/spirv.h): the SPIR-V words, the
# preprocessed GLSL (for --dump-kernels) and the defines. Declare it where it is used
# with SDSPEED_SPIRV_SHADER(<symbol>). Header changes rebuild it (glslc -MD depfile).
function(sdspeed_add_spirv target)
  cmake_parse_arguments(S "" "NAME;SOURCE" "DEFINES" ${ARGN})
  if(NOT S_NAME OR NOT S_SOURCE)
    message(FATAL_ERROR "sdspeed_add_spirv: NAME and SOURCE are required")
  endif()
  get_filename_component(src ${S_SOURCE} ABSOLUTE)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/spirv/${S_NAME})
  set(dflags "")
  foreach(d ${S_DEFINES})
    list(APPEND dflags -D${d})
  endforeach()
  set(glslc_args --target-env=${SDSPEED_GLSLC_TARGET_ENV} -fshader-stage=compute -O -Werror ${dflags})
  set(validate "")
  if(SDSPEED_SPIRV_VAL)
    set(validate COMMAND ${SDSPEED_SPIRV_VAL} --target-env ${SDSPEED_GLSLC_TARGET_ENV} ${out}.spv)
  endif()
  add_custom_command(
    OUTPUT ${out}.spv ${out}.spv.inc ${out}.glsl
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/spirv
    COMMAND ${SDSPEED_GLSLC} ${glslc_args} -MD -MF ${out}.d -o ${out}.spv ${src}
    ${validate}
    COMMAND ${SDSPEED_GLSLC} ${glslc_args} -mfmt=num -o ${out}.spv.inc ${src}
    COMMAND ${SDSPEED_GLSLC} ${glslc_args} -E -o ${out}.glsl ${src}
    DEPENDS ${src}
    DEPFILE ${out}.d
    COMMENT "glslc ${S_NAME} (${S_DEFINES})"
    VERBATIM)
  string(REPLACE ";" " " defines_text "${S_DEFINES}")
  add_custom_command(
    OUTPUT ${out}.cpp
    COMMAND ${CMAKE_COMMAND} -DNAME=${S_NAME} -DWORDS=${out}.spv.inc -DGLSL=${out}.glsl
            "-DDEFINES=${defines_text}" -DOUTPUT=${out}.cpp -P ${PROJECT_SOURCE_DIR}/cmake/EmbedSpirv.cmake
    DEPENDS ${out}.spv.inc ${out}.glsl ${PROJECT_SOURCE_DIR}/cmake/EmbedSpirv.cmake
    COMMENT "Embedding SPIR-V ${S_NAME}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out}.cpp)
endfunction()
