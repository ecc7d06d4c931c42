#include "tuning/tuner.h"

#include <chrono>
#include <cmath>
#include <map>

#include "runtime/error.h"
#include "runtime/hash.h"
#include "tuning/measure.h"

#ifdef SDSPEED_COMMIT_FROM_HEADER
#include "sdspeed_commit.h"
#endif
#ifndef SDSPEED_COMMIT
#define SDSPEED_COMMIT "unknown"
#endif

namespace sdspeed {

std::string sdspeedCommit() { return SDSPEED_COMMIT; }



size_t parseBudget(const std::string& text, size_t spaceSize) {
  if (text.empty()) return spaceSize;
  try {
    size_t used = 0;
    if (text.back() == '%') {
      double pct = std::stod(text.substr(0, text.size() - 1), &used);
      if (used == text.size() - 1 && pct > 0 && pct <= 100)
        return std::max<size_t>(1, static_cast<size_t>(std::floor(pct / 100.0 * static_cast<double>(spaceSize))));
    } else {
      long n = std::stol(text, &used);
      if (used == text.size() && n > 0) return std::min(static_cast<size_t>(n), spaceSize);
    }
  } catch (const std::exception&) {
  }
  throw Error("bad budget '" + text + "' (want a count like 50 or a fraction like 25%)");
}

SearchResult runSearch(const std::vector<Candidate>& space, Strategy& strategy, size_t budget, double seconds,
                       const Evaluator& evaluate, const ProgressFn& progress) {
  SearchResult res;
  res.spaceSize = space.size();
  const auto start = std::chrono::steady_clock::now();
  while (res.rows.size() < budget) {
    if (seconds > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= seconds)
      break;
    auto idx = strategy.next();
    if (!idx) break;
    bool reused = false;
    SweepRow row = evaluate(*idx, reused);
    (reused ? res.reused : res.measured)++;
    const bool ok = row.status == Status::Ok;
    if (!ok && row.status != Status::Unsupported) ++res.failed;
    strategy.report(*idx, ok ? row.medianUs : kFailedCost);
    res.rows.push_back(row);
    if (ok && (res.bestIndex < 0 || row.medianUs < res.rows[static_cast<size_t>(res.bestIndex)].medianUs))
      res.bestIndex = static_cast<long>(res.rows.size() - 1);
    if (progress) progress(res.rows.size(), budget, res.rows.back(), res);
  }
  return res;
}

DeviceEvaluator::DeviceEvaluator(Backend& ctx, const Family& fam, const OpInstance& instance,
                                 const std::vector<Candidate>& space, SweepCache& cache, const TimingPolicy& policy,
                                 uint64_t seed)
    : ctx_(ctx), fam_(fam), instance_(instance), problem_(instance.problem(fam)), space_(space), cache_(cache),
      policy_(policy), seed_(seed), sourceHash_(familySourceHash(ctx, fam)) {}

DeviceEvaluator::~DeviceEvaluator() {
  stop_ = true;
  for (auto& t : builders_) t.join();
}

void DeviceEvaluator::prebuild(const std::vector<size_t>& order, int threads) {
  // Points measured before need no build. Filtered here, before any builder starts:
  // SweepCache is not thread-safe, and the timing thread appends to it meanwhile.
  auto todo = std::make_shared<std::vector<size_t>>();
  for (size_t i : order)
    if (!cache_.find(rowFor(space_[i]).key())) todo->push_back(i);
  auto next = std::make_shared<std::atomic<size_t>>(0);
  for (int t = 0; t < std::max(1, threads); ++t)
    builders_.emplace_back([this, next, todo] {
      for (size_t k = (*next)++; k < todo->size() && !stop_; k = (*next)++) {
        const Candidate& c = space_[(*todo)[k]];
        try {
          if (fam_.unsupportedReason(*c.variant, c.point, *problem_, instance_.format, ctx_.caps()).empty())
            prebuildOp(ctx_, fam_, *c.variant, c.point, instance_.format);
        } catch (...) {
          // Reported when the point is evaluated (the build is retried there).
        }
      }
    });
}

SweepRow DeviceEvaluator::rowFor(const Candidate& c) const {
  SweepRow row;
  row.instance = instance_.text();
  row.variant = c.variant->name;
  row.params = c.point.text();
  row.device = ctx_.caps().name;
  row.driver = ctx_.caps().driverVersion;
  row.sourceHash = sourceHash_;
  row.commit = sdspeedCommit();
  row.buildOptions = kBuildOptions;
  return row;
}

SweepRow DeviceEvaluator::operator()(size_t index, bool& reused) {
  const Candidate& c = space_[index];
  SweepRow row = rowFor(c);
  if (auto hit = cache_.find(row.key())) {
    reused = true;
    return *hit;
  }
  reused = false;
  Measurement m = measureCase(ctx_, fam_, *c.variant, c.point, *problem_, instance_.format, policy_, seed_);
  row.status = m.check.status;
  row.message = m.check.message;
  if (row.status == Status::Ok) {
    row.medianUs = m.timing.medianMs * 1e3;
    row.minUs = m.timing.minMs * 1e3;
    row.maxUs = m.timing.maxMs * 1e3;
    row.repeats = m.timing.repeats;
    row.gbPerSec = m.gbPerSec();
  }
  cache_.append(row);
  return row;
}

Evaluator replayEvaluator(const std::vector<SweepRow>& recording, const std::string& instance,
                          const std::vector<Candidate>& space) {
  auto byPoint = std::make_shared<std::map<std::string, SweepRow>>();
  for (const auto& r : recording)
    if (r.instance == instance) (*byPoint)[r.variant + " [" + r.params + "]"] = r;
  if (byPoint->empty()) throw Error("the recording has no rows for '" + instance + "'");
  return [byPoint, &space, instance](size_t index, bool& reused) {
    reused = false;
    auto it = byPoint->find(space[index].text());
    if (it != byPoint->end()) return it->second;
    SweepRow r;
    r.instance = instance;
    r.variant = space[index].variant->name;
    r.params = space[index].point.text();
    r.status = Status::Unsupported;
    r.message = "not in the recording";
    return r;
  };
}

}  // namespace sdspeed
