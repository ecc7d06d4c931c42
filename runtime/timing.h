// How sdspeed times an op, defined once for every family, the tuner and benches:
// an op's time is from the start of its first kernel to the end of its last
// (OpenCL profiling events, Vulkan timestamp queries: runtime/backend.h), the median over repeats after warm-up,
// with the inputs rotated among enough copies that the working set exceeds the
// device's last-level cache (CL_DEVICE_GLOBAL_MEM_CACHE_SIZE).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/backend.h"

namespace sdspeed {

struct TimingPolicy {
  int warmup = 3;
  // After the counted warm-up runs, the device is kept busy with further runs until
  // warmupMs of wall time has passed and two successive batches agree within
  // warmupSettle (at most 2 x warmupMs). Why: a GPU that idled (while the host built a
  // program or checked the last point against Eigen) keeps its idle clocks for a while
  // after work resumes. On an H200 the SM clock stayed at 345 MHz (1980 under load) for
  // the first ~0.8 s of work after 20 s of host-side checking: the op timed 6437 us after
  // counted warm-up runs and after 100 ms of timed warm-up (flat at idle clocks, so it
  // looked settled), 1258 us after 400 ms, ~1140 us inside a model run
  // (results/vulkan/warmup/README.md). 0 = counted runs only.
  double warmupMs = 0.0;
  double warmupSettle = 0.03;
  // The timed warm-up is skipped when the process's previous timeOp ended less than
  // warmGapMs ago: the clocks are still up (NVIDIA's fell about 1 s after work stopped),
  // so a tuner timing one point after another pays it once per idle spell. 0 = always.
  double warmGapMs = 500.0;
  // CPU devices (PoCL, lavapipe) have no GPU clock to wake: the timed warm-up is for the
  // others unless this is set (tests), which keeps CI's many short timings short.
  bool warmupOnCpu = false;
  int minRepeats = 10;
  int maxRepeats = 20000;  // enough for 50 ms of 2.5 us kernels
  double minTotalMs = 50.0;  // keep repeating until this much device time was measured
  int maxRotations = 64;     // cap on input copies (device memory)
  // Last-level cache size to rotate past; 0 = what the driver reports
  // (DeviceCaps::globalCacheBytes, OpenCL's CL_DEVICE_GLOBAL_MEM_CACHE_SIZE). Some
  // drivers report less than the real LLC (NVIDIA's OpenCL reports 4224 KiB on an H200,
  // whose L2 is 60 MB), so `bench --llc-mib` can raise it.
  uint64_t llcBytes = 0;
  uint64_t cacheBytes(const DeviceCaps& dev) const { return llcBytes ? llcBytes : dev.globalCacheBytes; }
};

struct TimingStats {
  int repeats = 0;
  int rotations = 1;
  bool fitsInCache = false;  // the rotated working set still fits in the LLC
  int warmupRuns = 0;        // runs before the first timed one (counted and timed warm-up)
  double warmupWallMs = 0;   // wall time the warm-up took
  bool warmupSettled = true; // false: 2 x warmupMs passed with successive batches still apart
  double medianMs = 0, minMs = 0, maxMs = 0;
  std::vector<double> samplesMs;
  // Per kernel of a run, in enqueue order: the median over the timed runs of that kernel's
  // own start-to-end time (`bench --stages`: where a multi-kernel op such as Winograd's
  // four stages spends its time). Empty for a one-kernel op, or when the timed runs
  // enqueued different numbers of kernels. The stages may overlap or leave gaps, so they
  // need not add up to medianMs, which is the whole run's span.
  std::vector<double> stageMedianMs;
};

// Nanoseconds from the earliest command start to the latest end (waits for them).
double eventSpanNs(const OpEvents& events);

// Median/min/max of samples (samples non-empty).
TimingStats summarize(std::vector<double> samplesMs);

// Copies of the op's inputs needed so that rotating through them touches more
// than twice the device's last-level cache; at least 1, at most policy.maxRotations
// and never more than a quarter of device memory.
int rotationsFor(const DeviceCaps& dev, size_t bytesPerRun, const TimingPolicy& policy);

// Runs enqueue(rotation) -> the op's kernel events, warm-up first, then repeats.
TimingStats timeOp(Backend& backend, int rotations, const std::function<OpEvents(int rotation)>& enqueue,
                   const TimingPolicy& policy = {});

}  // namespace sdspeed
