#include "runtime/memory_tracker.h"

#include <algorithm>

#include "runtime/backend.h"

namespace sdspeed {

void MemoryTracker::allocated(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_ += bytes;
  peak_ = std::max(peak_, live_);
  for (auto& [id, peak] : windows_) peak = std::max(peak, live_);
}

void MemoryTracker::released(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_ -= std::min(live_, bytes);
  }
  released_.notify_all();
}

MemoryStats MemoryTracker::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {live_, peak_};
}

void MemoryTracker::resetPeak() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_ = live_;
}

bool MemoryTracker::waitForLiveBytes(uint64_t bytes, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return released_.wait_for(lock, timeout, [&] { return live_ <= bytes; });
}

PeakWindow::PeakWindow(std::shared_ptr<MemoryTracker> tracker) : tracker_(std::move(tracker)) {
  std::lock_guard<std::mutex> lock(tracker_->mutex_);
  id_ = tracker_->nextWindow_++;
  start_ = tracker_->live_;
  tracker_->windows_[id_] = start_;
}

PeakWindow::PeakWindow(const Backend& backend) : PeakWindow(backend.memoryTracker()) {}

PeakWindow::~PeakWindow() {
  std::lock_guard<std::mutex> lock(tracker_->mutex_);
  tracker_->windows_.erase(id_);
}

uint64_t PeakWindow::peakBytes() const {
  std::lock_guard<std::mutex> lock(tracker_->mutex_);
  return tracker_->windows_.at(id_);
}

}  // namespace sdspeed
