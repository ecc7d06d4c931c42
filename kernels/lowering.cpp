#include "kernels/lowering.h"

#include "runtime/error.h"
#include "runtime/hash.h"
#include "runtime/opencl/context.h"

namespace sdspeed {
namespace {

// The backend's OpenCL implementation, or null. One cast per backend here, so that no
// caller and no family declaration asks which API it runs on.
Context* openCl(Backend& backend) { return dynamic_cast<Context*>(&backend); }

[[noreturn]] void noLowering(const Backend& backend, const Family& fam) {
  throw UnsupportedError("family " + fam.name() + " has no " + backend.api() + " kernels");
}

}  // namespace

std::unique_ptr<PreparedOp> prepareOp(Backend& backend, const Family& fam, const VariantDef& v, const ParamPoint& p,
                                      const Problem& prob, const StorageFormat& f) {
  if (Context* cl = openCl(backend)) return fam.prepare(*cl, v, p, prob, f);
  noLowering(backend, fam);
}

void prebuildOp(Backend& backend, const Family& fam, const VariantDef& v, const ParamPoint& p,
                const StorageFormat& f) {
  if (Context* cl = openCl(backend)) return fam.prebuild(*cl, v, p, f);
  noLowering(backend, fam);
}

std::string familySourceHash(Backend& backend, const Family& fam) {
  if (Context* cl = openCl(backend))
    return Fnv1a().add(cl->sources().get("common/prelude.cl")).add(fam.sourceText(*cl)).hex().substr(0, 12);
  noLowering(backend, fam);
}

}  // namespace sdspeed
