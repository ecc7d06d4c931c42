// Timing one configuration the way the runtime defines an op's time (runtime/timing.h),
// behind the accuracy gate: a configuration is timed only after checkCase passed.
#pragma once

#include "runtime/timing.h"
#include "tuning/check.h"

namespace sdspeed {

struct Measurement {
  CheckResult check;      // status / message of the accuracy gate (or build/run failure)
  TimingStats timing;     // valid when check.status == Ok
  size_t bytes = 0;       // the op's minimal traffic (Family::minBytes)
  double gbPerSec() const { return timing.medianMs > 0 ? bytes / (timing.medianMs * 1e6) : 0; }
};

Measurement measureCase(Context& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p,
                        const Problem& prob, const StorageFormat& f, const TimingPolicy& policy,
                        uint64_t seed);

}  // namespace sdspeed
