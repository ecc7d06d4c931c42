# Cross build for 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu, the arm64
# libraries scripts/setup-debian-arm64 extracts into SDSPEED_ARM64_SYSROOT, and
# qemu-user to run what it builds (ctest, gtest_discover_tests). Used by
# scripts/test-arm64 to catch arm64-specific breakage without a phone; it sets
# SDSPEED_OPENCL_DLOPEN as the Android build does, so no arm64 OpenCL library is needed.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(DEFINED ENV{SDSPEED_ARM64_SYSROOT})
  set(SDSPEED_ARM64_SYSROOT $ENV{SDSPEED_ARM64_SYSROOT})
else()
  set(SDSPEED_ARM64_SYSROOT /opt/sdspeed-arm64)
endif()

# Libraries, headers and CMake package files only from the cross toolchain's tree
# and the extracted set (which holds the architecture-free headers too): a -I of the
# host's /usr/include would mix the host's C headers into the arm64 build.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu ${SDSPEED_ARM64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# qemu finds the arm64 libc and libstdc++ under -L; the extracted libraries (and the
# ICU data library they load in turn) through LD_LIBRARY_PATH in the guest.
set(CMAKE_CROSSCOMPILING_EMULATOR
    qemu-aarch64 -L /usr/aarch64-linux-gnu
    -E LD_LIBRARY_PATH=${SDSPEED_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu:${SDSPEED_ARM64_SYSROOT}/lib/aarch64-linux-gnu)
# zlib1g (libpng's dependency) ships its runtime in /lib, not /usr/lib: the linker must
# find it there when it checks libpng's own dependencies.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${SDSPEED_ARM64_SYSROOT}/lib/aarch64-linux-gnu")

set(SDSPEED_OPENCL_DLOPEN ON CACHE BOOL "dlopen libOpenCL.so at run time")
