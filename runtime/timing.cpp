#include "runtime/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

#include "runtime/error.h"

namespace sdspeed {

namespace {
// When each backend's last timeOp ended (steady clock, ns), for warmGapMs: per backend,
// since two GPUs in one process (tune --device all) keep their own clocks. A backend
// freed and another made at its address may skip one warm-up: a slower first figure, no
// wrong one.
using Clock = std::chrono::steady_clock;
std::mutex gLastMu;
std::map<const Backend*, Clock::time_point> gLastTimedEnd;
}  // namespace

double eventSpanNs(const OpEvents& events) {
  if (events.empty()) throw Error("an op enqueued no kernels to time");
  uint64_t first = ~uint64_t(0), last = 0;
  for (const auto& e : events) {
    first = std::min(first, e->startNs());
    last = std::max(last, e->endNs());
  }
  return last > first ? static_cast<double>(last - first) : 0.0;
}

TimingStats summarize(std::vector<double> samples) {
  TimingStats s;
  s.repeats = static_cast<int>(samples.size());
  s.samplesMs = samples;
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  s.minMs = samples.front();
  s.maxMs = samples.back();
  s.medianMs = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return s;
}

int rotationsFor(const DeviceCaps& dev, size_t bytesPerRun, const TimingPolicy& policy) {
  if (bytesPerRun == 0) return 1;
  size_t want = 2 * policy.cacheBytes(dev) / bytesPerRun + 1;
  size_t memCap = std::max<size_t>(1, dev.globalMemBytes / 4 / bytesPerRun);
  return static_cast<int>(std::clamp<size_t>(want, 1, std::min<size_t>(policy.maxRotations, memCap)));
}

TimingStats timeOp(Backend& backend, int rotations, const std::function<OpEvents(int rotation)>& enqueue,
                   const TimingPolicy& policy) {
  rotations = std::max(1, rotations);
  int r = 0;
  const auto warmStart = Clock::now();
  for (int i = 0; i < policy.warmup; ++i) enqueue(r++ % rotations);
  backend.finish();
  int warmRuns = r;
  bool settled = true;
  bool recentlyBusy = false;
  if (policy.warmGapMs > 0) {
    std::lock_guard<std::mutex> lock(gLastMu);
    const auto it = gLastTimedEnd.find(&backend);
    recentlyBusy = it != gLastTimedEnd.end() &&
                   std::chrono::duration<double, std::milli>(warmStart - it->second).count() < policy.warmGapMs;
  }
  if (policy.warmupMs > 0 && !recentlyBusy && (policy.warmupOnCpu || !backend.caps().isCpu())) {
    // Timed warm-up: batches of about a quarter of warmupMs each, back to back, until the
    // wall clock has passed warmupMs since the counted runs finished (host time before
    // the device worked does not count) and the last two batch medians agree (the clocks
    // have stopped rising), or 2 x warmupMs has passed after at least two batches.
    const auto timedStart = Clock::now();
    auto wallMs = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - timedStart).count(); };
    double last = 0, perRun = 0;
    bool haveLast = false;
    settled = false;
    while (true) {
      const int n = perRun > 0 ? std::clamp(static_cast<int>(policy.warmupMs / 4 / perRun) + 1, 1, 256) : 1;
      std::vector<OpEvents> runs;
      runs.reserve(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) runs.push_back(enqueue(r++ % rotations));
      backend.flush();
      std::vector<double> ms;
      for (const auto& events : runs) ms.push_back(eventSpanNs(events) * 1e-6);
      const double med = summarize(ms).medianMs;
      perRun = std::max(med, 1e-4);
      const double wall = wallMs();
      if (wall >= policy.warmupMs && haveLast && std::fabs(med - last) <= policy.warmupSettle * last) {
        settled = true;
        break;
      }
      if (wall >= 2 * policy.warmupMs && haveLast) break;
      last = med;
      haveLast = true;
    }
    warmRuns = r;
  }
  const double warmWall = std::chrono::duration<double, std::milli>(Clock::now() - warmStart).count();
  // Runs are enqueued in batches and read back afterwards, so the device works back
  // to back as in a pipeline instead of idling (and clocking down) between runs.
  std::vector<double> samples;
  std::vector<std::vector<double>> stages;  // per kernel of a run: its own time in each timed run
  bool stagesAgree = true;
  double total = 0;
  int batch = std::max(1, policy.minRepeats);
  while (static_cast<int>(samples.size()) < policy.maxRepeats) {
    batch = std::min(batch, policy.maxRepeats - static_cast<int>(samples.size()));
    std::vector<OpEvents> runs;
    runs.reserve(static_cast<size_t>(batch));
    for (int i = 0; i < batch; ++i) runs.push_back(enqueue(r++ % rotations));
    backend.flush();
    for (const auto& events : runs) {
      double ms = eventSpanNs(events) * 1e-6;
      samples.push_back(ms);
      total += ms;
      if (samples.size() == 1) stages.resize(events.size());  // the first timed run sets the count
      stagesAgree = stagesAgree && events.size() == stages.size();
      if (stagesAgree)
        for (size_t i = 0; i < events.size(); ++i) {
          const uint64_t a = events[i]->startNs(), b = events[i]->endNs();
          stages[i].push_back(b > a ? static_cast<double>(b - a) * 1e-6 : 0.0);
        }
    }
    if (static_cast<int>(samples.size()) >= policy.minRepeats && total >= policy.minTotalMs) break;
    // Size the next batch from the time per run seen so far.
    const double perRun = std::max(total / samples.size(), 1e-4);
    batch = std::clamp(static_cast<int>((policy.minTotalMs - total) / perRun) + 1, 1, 256);
  }
  backend.finish();
  {
    std::lock_guard<std::mutex> lock(gLastMu);
    gLastTimedEnd[&backend] = Clock::now();
  }
  TimingStats s = summarize(std::move(samples));
  if (stagesAgree && stages.size() > 1)
    for (auto& st : stages) s.stageMedianMs.push_back(summarize(std::move(st)).medianMs);
  s.rotations = rotations;
  s.warmupRuns = warmRuns;
  s.warmupWallMs = warmWall;
  s.warmupSettled = settled;
  return s;
}

}  // namespace sdspeed
