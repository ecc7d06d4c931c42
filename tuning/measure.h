// Timing one configuration the way the runtime defines an op's time (runtime/timing.h),
// behind the accuracy gate: a configuration is timed only after checkCase passed.
#pragma once

#include <memory>
#include <vector>

#include "runtime/timing.h"
#include "tuning/check.h"

namespace sdspeed {

struct Measurement {
  CheckResult check;      // status / message of the accuracy gate (or build/run failure)
  TimingStats timing;     // valid when check.status == Ok
  size_t bytes = 0;       // the op's minimal traffic (Family::minBytes)
  uint64_t footprintBytes = 0;  // device bytes of one run (TimedCase::footprintBytes)
  bool derivedPerCall = false;  // derived weights made per call (a budget asked for it)
  double gbPerSec() const { return timing.medianMs > 0 ? bytes / (timing.medianMs * 1e6) : 0; }
};

// One configuration behind the accuracy gate, ready to be timed in as many calls as
// a caller wants (measureCase times it once; sdspeed-bench once per batch of Google
// Benchmark iterations). The constructor runs checkCase; only when it passed are the
// rotated tensor sets (enough that the bytes the op must touch pass 2x the LLC)
// created and uploaded.
class TimedCase {
 public:
  // memoryBudget (bytes, 0: none): the op's device footprint of one run must fit; a
  // convolution whose resident derived weights do not fit makes them per call (as the
  // pipeline's budget does) when that needs fewer bytes, and what still does not fit is
  // Unsupported, naming its bytes.
  TimedCase(Backend& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p, const Problem& prob,
            const StorageFormat& f, const TimingPolicy& policy, uint64_t seed, uint64_t memoryBudget = 0);
  // The gate's result, or RunFailed when preparing or a timed run threw, or
  // Inaccurate when the output was wrong after the timed launches (verify()).
  const CheckResult& check() const { return check_; }
  bool ok() const { return check_.status == Status::Ok; }
  size_t bytes() const { return bytes_; }
  int rotations() const { return static_cast<int>(sets_.size()); }
  bool fitsInCache() const;
  // One run's device bytes: one tensor set (inputs, weights, output), the op's scratch and
  // its resident derived weights. The extra tensor sets timing rotates through to get past
  // the cache are the measurement's, not the op's, and are not counted.
  uint64_t footprintBytes() const { return footprint_; }
  bool derivedPerCall() const { return op_ && op_->derivedWeightsPerCall(); }
  // timeOp (runtime/timing.h) with `policy`, the rotation continuing where the last
  // call left it. Requires ok(); on a failed launch check() becomes RunFailed and the
  // Error is rethrown.
  TimingStats time(const TimingPolicy& policy);
  // Launches once more on set 0 and judges that output (state carried between
  // launches included); on a wrong output check() becomes Inaccurate. Returns ok().
  bool verify();

 private:
  Backend& ctx_;
  const Family& fam_;
  StorageFormat format_;
  TimingPolicy policy_;
  Tolerance tolerance_;  // the variant's
  CheckResult check_;
  size_t bytes_ = 0;
  uint64_t footprint_ = 0;
  std::unique_ptr<PreparedOp> op_;
  std::shared_ptr<const ReferenceData> data_;
  std::vector<OpTensors> sets_;
  int next_ = 0;
};

Measurement measureCase(Backend& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p,
                        const Problem& prob, const StorageFormat& f, const TimingPolicy& policy,
                        uint64_t seed, uint64_t memoryBudget = 0);

}  // namespace sdspeed
