// How a family's declaration (kernels/family.h: variants, parameters, problems,
// reference, tolerances) reaches a backend (runtime/backend.h): the one entry point the
// check harness, the tuner, bench and the executor call to build and run an op,
// whatever the GPU API. Each backend lowers a family in its own way:
//   - OpenCL: the family's OpenCL C source and its prepare() (programs built from the
//     declared #defines, arguments bound by name, launch grids by the declared rule);
//   - Vulkan: GLSL compute shaders (runtime/vulkan/), where a family has them.
// A family a backend cannot lower is an UnsupportedError naming both: `check` reports it
// as a visible skipped line, never as a pass.
#pragma once

#include <memory>
#include <string>

#include "kernels/family.h"
#include "runtime/backend.h"

namespace sdspeed {

// Builds (or fetches from the backend's cache) what the point runs and returns the op.
std::unique_ptr<PreparedOp> prepareOp(Backend& backend, const Family& fam, const VariantDef& v, const ParamPoint& p,
                                      const Problem& prob, const StorageFormat& f);
// Builds only the program(s) the point will use, so a tuner can compile ahead in threads.
void prebuildOp(Backend& backend, const Family& fam, const VariantDef& v, const ParamPoint& p,
                const StorageFormat& f);
// Why the backend cannot run this point although the family's rules allow it ("" when it
// can): OpenCL lowers every variant; another backend may lack some variant's kernels
// (Vulkan's GEMM has no `tiled`). The executor asks before it settles on a tuned
// variant, so that it falls back visibly instead of failing at prepare. Cheap: the
// backend's lowering runs its checks but builds no program or pipeline (Vulkan:
// VulkanBackend::DescribeOnly), so asking about variants never chosen costs no compile.
std::string loweringGap(Backend& backend, const Family& fam, const VariantDef& v, const ParamPoint& p,
                        const Problem& prob, const StorageFormat& f);
// A hash of the kernel source the backend builds the family from: a tuning database's
// entries are stale when it changes (tuning/database.h).
std::string familySourceHash(Backend& backend, const Family& fam);

}  // namespace sdspeed
