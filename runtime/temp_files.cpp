#include "runtime/temp_files.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace sdspeed {
namespace {

// Far more than the threads that write at once (a sweep's builders store programs).
constexpr int kSlots = 64;
constexpr size_t kMaxPath = 4096;

enum : int { kFree = 0, kFilling = 1, kLive = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  char path[kMaxPath];
};
Slot g_slots[kSlots];
static_assert(std::atomic<int>::is_always_lock_free, "the handler reads these atomics");

void onSignal(int sig) {
  removeRegisteredTempFiles();
  // Restore the default action and deliver the signal again, so the process ends with
  // the signal's status (a shell sees 130 for Ctrl-C, as without the handler).
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

int registerTempFile(const std::string& path) {
  if (path.size() >= kMaxPath) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(kLive, std::memory_order_release);  // the path is complete
    return i;
  }
  return -1;
}

void unregisterTempFile(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  g_slots[slot].state.store(kFree, std::memory_order_release);
}

int removeRegisteredTempFiles() {
  int removed = 0;
  for (auto& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == kLive && ::unlink(s.path) == 0) ++removed;
  return removed;
}

void installTempFileSignalCleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; ++i) {
      // Only where the signal still has its default action: a program that ignores
      // it or handles it itself (a test framework, an embedding app) keeps its choice.
      struct sigaction old {};
      if (::sigaction(sigs[i], nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
        continue;
      struct sigaction sa {};
      sa.sa_handler = onSignal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      ::sigaction(sigs[i], &sa, nullptr);
    }
  });
}

}  // namespace sdspeed
