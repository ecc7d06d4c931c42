// The one harness that checks a family's kernels against its reference: used by
// the GoogleTest suite, `sdspeed check` and (later) the tuner's accuracy gate.
// For one (variant, point, problem, storage format) it uploads fresh random inputs,
// poisons the output with NaN and puts a canary past its end, runs the op, and
// compares with the double reference: every element written, within tolerance,
// NC4HW4 padding lanes written as zero, canary intact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/family.h"
#include "tuning/accuracy.h"
#include "tuning/status.h"

namespace sdspeed {

struct CheckResult {
  std::string family, variant, params, storage, problem;
  Status status = Status::Ok;
  Comparison cmp;
  bool canaryIntact = true;
  size_t badPadding = 0;   // NC4HW4 pad lanes not zero
  std::string message;     // why it failed / is unsupported
  bool passed() const { return status == Status::Ok || status == Status::Unsupported; }
};

CheckResult checkCase(Context& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p,
                      const Problem& prob, const StorageFormat& f, uint64_t seed);

// The points `check` runs for a variant: the defaults, then `extra` more drawn
// deterministically (from seed) from the constrained space, skipping any the device
// cannot run.
std::vector<ParamPoint> samplePoints(const VariantDef& v, const DeviceInfo& dev, int extra,
                                     uint64_t seed);

}  // namespace sdspeed
