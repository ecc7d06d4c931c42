// The device bytes a backend allocated, with its high-water mark: neither OpenCL nor
// Vulkan reports a process's peak device memory, so each backend counts its own
// allocations here (OpenCL through memory-object destructor callbacks, Vulkan where its
// storage buffers are made and freed). What the runner reports as "device high-water
// mark" (docs: GB = 10^9 bytes) is this count.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace sdspeed {

class Backend;

struct MemoryStats {
  uint64_t liveBytes = 0, peakBytes = 0;
};

class MemoryTracker {
 public:
  void allocated(uint64_t bytes);
  void released(uint64_t bytes);
  MemoryStats stats() const;
  void resetPeak();  // the peak becomes what is live now
  // Waits (at most `timeout`) until at most `bytes` are live: a driver may destroy
  // released objects on its own thread a little later (PoCL does). False on timeout.
  bool waitForLiveBytes(uint64_t bytes, std::chrono::milliseconds timeout);

 private:
  friend class PeakWindow;
  mutable std::mutex mutex_;
  std::condition_variable released_;
  uint64_t live_ = 0, peak_ = 0;
  std::map<int, uint64_t> windows_;  // open PeakWindow id -> its high-water mark
  int nextWindow_ = 0;
};

// The high-water mark of live bytes from its construction on, kept apart from the
// tracker's own peak (which resetPeak() moves): how much one phase (a component's load,
// warm-up and runs) needed on top of what was live when it began. Holds the tracker, so
// it may outlive the backend.
class PeakWindow {
 public:
  explicit PeakWindow(std::shared_ptr<MemoryTracker> tracker);
  explicit PeakWindow(const Backend& backend);  // its tracker
  ~PeakWindow();
  PeakWindow(const PeakWindow&) = delete;
  PeakWindow& operator=(const PeakWindow&) = delete;
  uint64_t startBytes() const { return start_; }  // live when it began
  uint64_t peakBytes() const;                      // the high-water mark since
  uint64_t addedBytes() const { return peakBytes() - start_; }

 private:
  std::shared_ptr<MemoryTracker> tracker_;
  int id_ = 0;
  uint64_t start_ = 0;
};

}  // namespace sdspeed
