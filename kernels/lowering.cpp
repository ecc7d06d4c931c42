#include "kernels/lowering.h"

#include <optional>
#include <sstream>

#include "runtime/error.h"
#include "runtime/hash.h"
#include "runtime/opencl/context.h"
#if SDSPEED_WITH_VULKAN
#include "kernels/vulkan/vulkan_lowering.h"
#endif

namespace sdspeed {
namespace {

// The backend's OpenCL implementation, or null. One cast per backend here, so that no
// caller and no family declaration asks which API it runs on.
Context* openCl(Backend& backend) { return dynamic_cast<Context*>(&backend); }

#if SDSPEED_WITH_VULKAN
vk::VulkanBackend* vulkan(Backend& backend) { return dynamic_cast<vk::VulkanBackend*>(&backend); }
#endif

[[noreturn]] void noLowering(const Backend& backend, const Family& fam) {
  throw UnsupportedError("family " + fam.name() + " has no " + backend.api() + " kernels");
}

}  // namespace

std::unique_ptr<PreparedOp> prepareOp(Backend& backend, const Family& fam, const VariantDef& v, const ParamPoint& p,
                                      const Problem& prob, const StorageFormat& f) {
  if (Context* cl = openCl(backend)) return fam.prepare(*cl, v, p, prob, f);
#if SDSPEED_WITH_VULKAN
  if (vk::VulkanBackend* vkb = vulkan(backend))
    if (const VulkanLowering* l = findVulkanLowering(fam.name())) return l->prepare(*vkb, fam, v, p, prob, f);
#endif
  noLowering(backend, fam);
}

void prebuildOp(Backend& backend, const Family& fam, const VariantDef& v, const ParamPoint& p,
                const StorageFormat& f) {
  if (Context* cl = openCl(backend)) return fam.prebuild(*cl, v, p, f);
#if SDSPEED_WITH_VULKAN
  // Pipelines are made when an op is prepared (from the on-disk cache when warm); the
  // SPIR-V itself was compiled at build time, so there is nothing to build ahead.
  if (vulkan(backend) && findVulkanLowering(fam.name())) return;
#endif
  noLowering(backend, fam);
}

std::string loweringGap(Backend& backend, const Family& fam, const VariantDef& v, const ParamPoint& p,
                        const Problem& prob, const StorageFormat& f) {
  if (openCl(backend)) return "";
  // Other backends say what they lack when an op is prepared (the lowering's own checks
  // and messages, parameter-level ones included). On Vulkan the op is prepared with its
  // pipelines described, not built: asking about every allowed variant (an ablation row's
  // list) then compiles none of those the executor does not choose.
#if SDSPEED_WITH_VULKAN
  std::optional<vk::VulkanBackend::DescribeOnly> noBuild;
  if (vk::VulkanBackend* vkb = vulkan(backend)) noBuild.emplace(*vkb);
#endif
  try {
    prepareOp(backend, fam, v, p, prob, f);  // the op is dropped unrun
    return "";
  } catch (const UnsupportedError& e) {
    return e.what();
  }
}

std::string familySourceHash(Backend& backend, const Family& fam) {
  if (Context* cl = openCl(backend))
    return Fnv1a().add(cl->sources().get("common/prelude.cl")).add(fam.sourceText(*cl)).hex().substr(0, 12);
#if SDSPEED_WITH_VULKAN
  if (vulkan(backend))
    if (const VulkanLowering* l = findVulkanLowering(fam.name())) {
      Fnv1a h;
      std::istringstream names(l->modules);  // one name, or several (conv: its Winograd module too)
      for (std::string name; names >> name;)
        if (const VulkanModules* m = findVulkanModules(name))
          for (const auto* s : *m)
            if (s) h.add(s->spirvString());
      return h.hex().substr(0, 12);
    }
#endif
  noLowering(backend, fam);
}

}  // namespace sdspeed
