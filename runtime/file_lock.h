// An exclusive advisory lock (flock) on PATH.lock (or, when PATH is a folder, on the
// folder itself: no file is left in it), held while the object lives: two
// processes writing the same file (two `sdspeed tune` on one sweep cache) would interleave
// rows and race on rewrites, so the second fails at once with one line naming the file
// and the holder's pid. The kernel drops the lock when its holder exits, however it
// exits, so a killed sweep never leaves a stale lock; the small .lock file itself stays.
#pragma once

#include <string>

namespace sdspeed {

class FileLock {
 public:
  // what: how the error line calls the locked file ("sweep cache"). wait: block until
  // the holder lets go (a short read-modify-write such as a database update) instead of
  // failing.
  FileLock(const std::string& path, const std::string& what, bool wait = false);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  const std::string& lockPath() const { return lockPath_; }

 private:
  std::string lockPath_;
  int fd_ = -1;
};

}  // namespace sdspeed
