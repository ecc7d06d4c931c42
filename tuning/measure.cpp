#include "tuning/measure.h"

#include <memory>
#include <random>

#include "runtime/cl_error.h"

namespace sdspeed {

TimedCase::TimedCase(Context& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                     const StorageFormat& f, const TimingPolicy& policy, uint64_t seed)
    : ctx_(ctx), fam_(fam), format_(f), policy_(policy), tolerance_(fam.tolerance(v, f.dtype)) {
  check_ = checkCase(ctx, fam, v, p, prob, f, seed);
  bytes_ = fam.minBytes(prob, f);
  if (!ok()) return;
  try {
    op_ = fam.prepare(ctx, v, p, prob, f);  // cached program: no rebuild
    data_ = referenceData(fam, prob, f, seed);
    // Enough full tensor sets that the bytes the op must touch, rotated, pass the LLC.
    const int rotations = rotationsFor(ctx.device(), bytes_, policy);
    for (int r = 0; r < rotations; ++r) {
      sets_.push_back(OpTensors::create(ctx, fam, prob, f, false));
      sets_.back().upload(data_->inputs);
    }
  } catch (const Error& e) {
    check_.status = Status::RunFailed;
    check_.message = e.what();
  }
}

bool TimedCase::fitsInCache() const {
  return static_cast<uint64_t>(rotations()) * bytes_ < 2 * policy_.cacheBytes(ctx_.device());
}

TimingStats TimedCase::time(const TimingPolicy& policy) {
  if (!ok()) throw Error("TimedCase::time: the configuration did not pass: " + check_.message);
  const int n = rotations();
  // timeOp's rotation index restarts at 0 on every call; continue ours instead, so
  // short calls still cycle through every set.
  try {
    TimingStats s = timeOp(ctx_, n, [&](int) { return op_->enqueue(sets_[static_cast<size_t>(next_++ % n)].args()); },
                           policy);
    s.fitsInCache = fitsInCache();
    return s;
  } catch (const Error& e) {
    check_.status = Status::RunFailed;
    check_.message = e.what();
    throw;
  }
}

bool TimedCase::verify() {
  if (!ok()) return false;
  try {
    for (auto& e : op_->enqueue(sets_.front().args())) {
      cl_event ev = e.get();
      clCheck(clWaitForEvents(1, &ev), "clWaitForEvents");
    }
    DeviceTensor& out = sets_.front().output();
    CheckResult after = check_;
    judge(after, tolerance_, out.desc(), out.downloadBytes(), data_->ref);
    if (after.status != Status::Ok) {
      check_.status = Status::Inaccurate;
      check_.message = "output wrong after the timed launches: " + after.message;
    }
  } catch (const Error& e) {
    check_.status = Status::RunFailed;
    check_.message = e.what();
  }
  return ok();
}

Measurement measureCase(Context& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p,
                        const Problem& prob, const StorageFormat& f, const TimingPolicy& policy,
                        uint64_t seed) {
  Measurement m;
  TimedCase tc(ctx, fam, v, p, prob, f, policy, seed);
  m.bytes = tc.bytes();
  if (tc.ok()) {
    try {
      m.timing = tc.time(policy);
      tc.verify();
    } catch (const Error&) {
      // tc.check() says run_failed and why
    }
  }
  m.check = tc.check();
  return m;
}

}  // namespace sdspeed
