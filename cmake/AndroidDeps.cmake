# Android NDK builds (android.toolchain.cmake sets ANDROID): the NDK has no yaml-cpp,
# Eigen or OpenCL headers, so they are fetched and built into the binary here (yaml-cpp
# as a static library, Eigen and the headers are header-only). Pass
# -DFETCHCONTENT_SOURCE_DIR_<NAME>=DIR to use a local checkout instead of a download.
# UNTESTED: no NDK and no network to these hosts where this was written; the same
# sources build in the arm64 cross build (scripts/test-arm64) from Debian's packages.
include(FetchContent)

# A phone build is the sdspeed binary alone: the tests, sdspeed-bench and the pipeline
# need GoogleTest, Google Benchmark and ICU (scripts/adb-sweep pushes just the binary).
set(SDSPEED_BUILD_TESTS OFF CACHE BOOL "Build the GoogleTest suite")
set(SDSPEED_BUILD_BENCH OFF CACHE BOOL "Build sdspeed-bench")
set(SDSPEED_BUILD_PIPELINE OFF CACHE BOOL "Build pipeline/")

if(NOT OpenCL_INCLUDE_DIR)
  FetchContent_Declare(opencl_headers
    GIT_REPOSITORY https://github.com/KhronosGroup/OpenCL-Headers.git
    GIT_TAG v2023.12.14)
  FetchContent_Populate(opencl_headers)
  set(OpenCL_INCLUDE_DIR ${opencl_headers_SOURCE_DIR} CACHE PATH "OpenCL headers (CL/cl.h)")
endif()

FetchContent_Declare(eigen
  GIT_REPOSITORY https://gitlab.com/libeigen/eigen.git
  GIT_TAG 3.4.0)
FetchContent_Populate(eigen)  # headers only: Eigen's own CMake project (tests, docs) is not needed
add_library(Eigen3::Eigen INTERFACE IMPORTED)
set_target_properties(Eigen3::Eigen PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${eigen_SOURCE_DIR})

set(YAML_CPP_BUILD_TESTS OFF CACHE BOOL "")
set(YAML_CPP_BUILD_TOOLS OFF CACHE BOOL "")
set(YAML_CPP_BUILD_CONTRIB OFF CACHE BOOL "")
set(YAML_BUILD_SHARED_LIBS OFF CACHE BOOL "")
FetchContent_Declare(yaml-cpp
  GIT_REPOSITORY https://github.com/jbeder/yaml-cpp.git
  GIT_TAG yaml-cpp-0.7.0)
FetchContent_MakeAvailable(yaml-cpp)  # defines the target `yaml-cpp` that tuning/ links
