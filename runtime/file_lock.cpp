#include "runtime/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "runtime/error.h"

namespace sdspeed {

FileLock::FileLock(const std::string& path, const std::string& what, bool wait) : lockPath_(path + ".lock") {
  std::error_code ec;
  const bool folder = std::filesystem::is_directory(path, ec);
  if (folder) lockPath_ = path;
  fd_ = folder ? ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
               : ::open(lockPath_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create the lock file " + lockPath_ + " for " + what + " " + path + ": " + std::strerror(errno));
  int rc;
  do rc = ::flock(fd_, LOCK_EX | (wait ? 0 : LOCK_NB));
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    // The holder wrote its pid when it took the lock.
    char pid[32] = {};
    const ssize_t n = folder ? 0 : ::pread(fd_, pid, sizeof pid - 1, 0);
    std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw Error(what + " " + path + " is in use by another process (pid " + (holder.empty() ? "unknown" : holder) +
                  ", holding " + lockPath_ + "): wait for it to finish, or give this one another output folder");
    throw Error("cannot lock " + lockPath_ + " for " + what + " " + path + ": " + std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (!folder && ::ftruncate(fd_, 0) == 0) {
    const ssize_t ignored = ::pwrite(fd_, pid.data(), pid.size(), 0);
    (void)ignored;  // the pid only improves the other process's message
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace sdspeed
