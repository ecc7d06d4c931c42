#include "tuning/measure.h"

#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "runtime/error.h"

namespace sdspeed {

namespace {

std::string mib(uint64_t b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  return s;
}

}  // namespace

TimedCase::TimedCase(Backend& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                     const StorageFormat& f, const TimingPolicy& policy, uint64_t seed, uint64_t memoryBudget)
    : ctx_(ctx), fam_(fam), format_(f), policy_(policy), tolerance_(fam.tolerance(v, f.dtype)) {
  check_ = checkCase(ctx, fam, v, p, prob, f, seed);
  bytes_ = fam.minBytes(prob, f);
  if (!ok()) return;
  try {
    op_ = prepareOp(ctx, fam, v, p, prob, f);  // cached program: no rebuild
    data_ = referenceData(fam, prob, f, seed);
    sets_.push_back(OpTensors::create(ctx, fam, prob, f, false));
    uint64_t tensors = 0;
    for (const DeviceTensor* t : sets_.front().args()) tensors += t->desc().bytes();
    auto footprint = [&] {
      return tensors + op_->scratchBytes() + (op_->derivedWeightsPerCall() ? 0 : op_->derivedWeightBytes());
    };
    footprint_ = footprint();
    if (memoryBudget && footprint_ > memoryBudget && op_->derivedWeightBytes() > 0) {
      // Per call the transform needs a scratch region of its own, which for one op alone
      // may save nothing (the pipeline saves by sharing that region between ops).
      op_->setDerivedWeightsPerCall(true);
      if (footprint() < footprint_) footprint_ = footprint();
      else op_->setDerivedWeightsPerCall(false);
    }
    if (memoryBudget && footprint_ > memoryBudget) {
      check_.status = Status::Unsupported;
      check_.message = "needs " + mib(footprint_) + " on the device (tensors " + mib(tensors) + ", scratch " +
                       mib(op_->scratchBytes()) + ", derived weights " +
                       mib(op_->derivedWeightsPerCall() ? 0 : op_->derivedWeightBytes()) + "), over --memory-budget " +
                       mib(memoryBudget);
      sets_.clear();
      return;
    }
    // Enough full tensor sets that the bytes the op must touch, rotated, pass the LLC.
    const int rotations = rotationsFor(ctx.caps(), bytes_, policy);
    sets_.front().upload(data_->inputs);
    for (int r = 1; r < rotations; ++r) {
      sets_.push_back(OpTensors::create(ctx, fam, prob, f, false));
      sets_.back().upload(data_->inputs);
    }
  } catch (const Error& e) {
    check_.status = Status::RunFailed;
    check_.message = e.what();
  }
}

bool TimedCase::fitsInCache() const {
  return static_cast<uint64_t>(rotations()) * bytes_ < 2 * policy_.cacheBytes(ctx_.caps());
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
    for (auto& e : op_->enqueue(sets_.front().args())) e->wait();
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

Measurement measureCase(Backend& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p,
                        const Problem& prob, const StorageFormat& f, const TimingPolicy& policy,
                        uint64_t seed, uint64_t memoryBudget) {
  Measurement m;
  TimedCase tc(ctx, fam, v, p, prob, f, policy, seed, memoryBudget);
  m.bytes = tc.bytes();
  m.footprintBytes = tc.footprintBytes();
  m.derivedPerCall = tc.derivedPerCall();
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
