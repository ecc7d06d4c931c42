#include "tuning/measure.h"

#include <memory>
#include <random>

#include "runtime/cl_error.h"

namespace sdspeed {

Measurement measureCase(Context& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p,
                        const Problem& prob, const StorageFormat& f, const TimingPolicy& policy,
                        uint64_t seed) {
  Measurement m;
  m.check = checkCase(ctx, fam, v, p, prob, f, seed);
  m.bytes = fam.minBytes(prob, f);
  if (m.check.status != Status::Ok) return m;
  try {
    auto op = fam.prepare(ctx, v, p, prob, f);  // cached program: no rebuild
    const auto slots = fam.slots();
    const auto shapes = fam.shapes(prob);
    std::mt19937_64 rng(seed);
    const auto inputs = fam.makeInputs(prob, rng);
    size_t setBytes = 0;
    for (size_t i = 0; i < slots.size(); ++i)
      setBytes += TensorDesc{shapes[i], slots[i].activation ? f : StorageFormat{}}.bytes();
    const int rotations = rotationsFor(ctx.device(), setBytes, policy);
    // `rotations` full sets of the op's tensors, so consecutive runs touch different memory.
    std::vector<std::vector<std::unique_ptr<DeviceTensor>>> sets(static_cast<size_t>(rotations));
    std::vector<std::vector<DeviceTensor*>> args(static_cast<size_t>(rotations));
    for (int r = 0; r < rotations; ++r)
      for (size_t i = 0; i < slots.size(); ++i) {
        TensorDesc d{shapes[i], slots[i].activation ? f : StorageFormat{}};
        sets[r].push_back(std::make_unique<DeviceTensor>(ctx, d));
        if (slots[i].access == Access::Read) sets[r].back()->upload(inputs[i].data);
        args[r].push_back(sets[r].back().get());
      }
    m.timing = timeOp(ctx, rotations, [&](int r) { return op->enqueue(args[static_cast<size_t>(r)]); }, policy);
    m.timing.fitsInCache = static_cast<uint64_t>(rotations) * setBytes <= policy.cacheBytes(ctx.device());
  } catch (const Error& e) {
    m.check.status = Status::RunFailed;
    m.check.message = e.what();
  }
  return m;
}

}  // namespace sdspeed
