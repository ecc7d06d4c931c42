// Run-time loading of the OpenCL library (CMake option SDSPEED_OPENCL_DLOPEN, ON for
// Android): a phone ships its vendor's libOpenCL.so but no ICD loader an NDK build could
// link against, so runtime/opencl/opencl_dlopen.cpp defines every cl* entry point sdspeed calls
// as a trampoline into the library dlopen()ed on first use.
#pragma once

#include <string>
#include <vector>

namespace sdspeed {

// Where the library is looked for: $SDSPEED_OPENCL_LIBRARY alone when it is set (an
// explicit choice is not second-guessed), else the usual vendor paths and then the
// dynamic linker's search (libOpenCL.so, libOpenCL.so.1).
std::vector<std::string> openclLibraryCandidates();

// dlopen()s the first candidate that loads and exports clGetPlatformIDs. Returns its
// handle and sets `loaded` to its path; nullptr when none does, with `error` set to one
// line: "no OpenCL library found: tried A (why), B (why)".
void* openOpenclLibrary(const std::vector<std::string>& candidates, std::string& loaded,
                        std::string& error);

// The path of the library the trampolines call, loading it on first use; throws
// sdspeed::Error with the line above when no candidate loads.
const std::string& openclLibraryPath();

}  // namespace sdspeed
