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
    const auto data = referenceData(fam, prob, f, seed);
    // Enough full tensor sets that the bytes the op must touch, rotated, pass the LLC.
    const int rotations = rotationsFor(ctx.device(), m.bytes, policy);
    std::vector<OpTensors> sets;
    for (int r = 0; r < rotations; ++r) {
      sets.push_back(OpTensors::create(ctx, fam, prob, f, false));
      sets.back().upload(data->inputs);
    }
    m.timing = timeOp(ctx, rotations, [&](int r) { return op->enqueue(sets[static_cast<size_t>(r)].args()); },
                      policy);
    m.timing.fitsInCache = static_cast<uint64_t>(rotations) * m.bytes < 2 * policy.cacheBytes(ctx.device());
    // The op must still compute after all the timed launches (state it carries between
    // launches included): launch once more on set 0 and judge that output.
    for (auto& e : op->enqueue(sets.front().args())) {
      cl_event ev = e.get();
      clCheck(clWaitForEvents(1, &ev), "clWaitForEvents");
    }
    DeviceTensor& out = sets.front().output();
    CheckResult after = m.check;
    judge(after, fam.tolerance(f.dtype), out.desc(), out.downloadBytes(), data->ref);
    if (after.status != Status::Ok) {
      m.check.status = Status::Inaccurate;
      m.check.message = "output wrong after the timed launches: " + after.message;
    }
  } catch (const Error& e) {
    m.check.status = Status::RunFailed;
    m.check.message = e.what();
  }
  return m;
}

}  // namespace sdspeed
