// What a compute shader does with each storage buffer of descriptor set 0, read from its
// SPIR-V: whether any variable bound there may be written (GLSL `readonly` becomes a
// NonWritable decoration on the block's members, or on the variable). OpRecorder uses
// it to leave out the barrier before a dispatch that shares no written range with the
// dispatches recorded since the last barrier (runtime/vulkan/dispatch.h).
//
// Hand-written rather than through SPIRV-Cross (Debian's libspirv-cross-c-shared-dev):
// this reads three decorations, the struct and pointer types and the variables (about 70
// lines), while the library would be one more package for CI and one more to carry to
// the device image, which has neither it nor glslc. A module this walk does not
// understand is taken as writing every binding, so it can cost a barrier, never drop one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sdspeed::vk {

enum class BindingAccess : uint8_t {
  Unused,  // no variable at the binding (glslc -O drops an unreferenced block)
  Read,    // every variable there is NonWritable
  Write,   // some variable there may be written (and read)
};

// One entry per binding 0 .. bindings - 1 of set 0. A module that does not parse as
// SPIR-V, uses decoration groups, or has a buffer variable without a Binding decoration
// gives Write everywhere. Access is per module: a binding that only some specialization
// (a STAGE constant) writes counts as written by every pipeline of the module.
std::vector<BindingAccess> storageBindingAccess(const uint32_t* words, size_t wordCount, uint32_t bindings);

}  // namespace sdspeed::vk
