// What a family says about running one kernel, whatever the GPU API: the launch grid
// and the buffer regions it passes. The backend turns these into its own calls
// (OpenCL: clEnqueueNDRangeKernel; Vulkan: vkCmdDispatch of global/local groups).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sdspeed {

size_t roundUp(size_t x, size_t multiple);

// A launch grid (dims = 1..3): work-items in all and per work-group. The global size is
// always a whole number of work-groups (OpenCL 1.2's rule, and a Vulkan dispatch counts
// groups): cover() is the declared rule that makes it so, CLBlast's global = problem
// rounded up to the local size.
struct Launch {
  int dims = 1;
  size_t global[3] = {1, 1, 1};
  size_t local[3] = {1, 1, 1};

  // `items` work-items per dimension (each rounded up to a multiple of `local`).
  static Launch cover(int dims, const size_t (&items)[3], const size_t (&local)[3]) {
    Launch l;
    l.dims = dims;
    for (int d = 0; d < 3; ++d) {
      l.local[d] = d < dims ? local[d] : 1;
      l.global[d] = d < dims ? roundUp(items[d], l.local[d]) : 1;
    }
    return l;
  }
  size_t groups(int d) const { return global[d] / local[d]; }
  size_t workGroupSize() const { return local[0] * local[1] * local[2]; }
};

// A part of a device buffer: where a planner put an op's scratch region (or an op's
// own buffer, at offset 0). Kernels take it as SD_REGION (kernels/common/prelude.cl).
// `mem` is the backend's buffer handle, opaque here so that no family declaration names a
// GPU type (OpenCL: a cl_mem; Vulkan: its buffer object); the backend's argument binding
// casts it back, and only it does.
struct BufferRegion {
  void* mem = nullptr;
  uint64_t offset = 0;  // bytes, a multiple of the kernel's element size
};

}  // namespace sdspeed
