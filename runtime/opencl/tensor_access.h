// Generates the OpenCL accessor macros through which a kernel reaches a tensor, from
// the tensor's StorageFormat. For a tensor named X the kernel writes:
//   X_PARAMS                 in its parameter list (memory object + C, HW, W ints; for
//                            buffers also X_OFF, the tensor's first element in it)
//   X_ARGS                   to pass the tensor on to a helper function taking X_PARAMS
//   X_LOAD(n, c, hw)         one element as float          (every format)
//   X_STORE(n, c, hw, v)     one element                   (buffers only: an image
//                            texel holds 4 channels, so a lone channel cannot be written)
//   X_LOAD4(n, s, hw)        channels 4s..4s+3 as float4, lanes past C read 0
//   X_STORE4(n, s, hw, v)    channels 4s..4s+3; lanes past C are skipped (NCHW) or
//                            written as zero (NC4HW4 padding)
//   X_LOADV(n, c, hw) / X_STOREV(n, c, hw, v)
//                            VEC consecutive hw positions of channel c (one vector
//                            load where the layout makes them contiguous)
// X_STORED_C is C, or C rounded up to whole slices where the layout pads; a kernel
// that writes single channels must write zeros into channels [C, X_STORED_C).
// A kernel may test X_IS_IMAGE. One kernel body thus serves every storage and layout.
#pragma once

#include <string>

#include "runtime/tensor_desc.h"

namespace sdspeed {

enum class Access { Read, Write };

// vec: the VEC width LOADV/STOREV use (1, 2, 4, 8 or 16).
std::string tensorAccessors(const std::string& name, const StorageFormat& format, Access access,
                            int vec);

}  // namespace sdspeed
