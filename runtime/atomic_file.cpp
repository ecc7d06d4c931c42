#include "runtime/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/error.h"
#include "runtime/temp_files.h"

namespace sdspeed {
namespace {

namespace fs = std::filesystem;

std::string kindOf(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISBLK(m)) return "a block device";
  return "not a regular file";
}

void writeAll(int fd, const std::string& content, const std::string& path) {
  size_t done = 0;
  while (done < content.size()) {
    ssize_t w = ::write(fd, content.data() + done, content.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error("cannot write '" + path + "': " + (w < 0 ? std::strerror(errno) : "disk full?"));
    done += static_cast<size_t>(w);
  }
}

// A device node or FIFO: no temporary file (a rename would replace the node with a
// regular file); opening a FIFO waits for its reader, as any writer's would.
void writeThrough(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open '" + path + "' for writing: " + std::strerror(errno));
  try {
    writeAll(fd, content, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

// Temporary file in the same directory, fsync, rename over `target`. `mode`: the
// permissions of the file being replaced (a new file gets 0644, less the umask).
void replaceAtomically(const std::string& target, const std::string& content, mode_t mode, bool keepMode) {
  fs::path t(target);
  std::error_code ec;
  if (t.has_parent_path()) fs::create_directories(t.parent_path(), ec);
  if (ec) throw Error("cannot create directory '" + t.parent_path().string() + "': " + ec.message());
  // A name no other process or thread uses: several threads may store the same file.
  static std::atomic<unsigned> counter{0};
  const std::string tmp = target + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()) % 100000) + "." +
                          std::to_string(counter++);
  installTempFileSignalCleanup();
  // Registered before it exists, so there is no moment a signal could leave it behind.
  const int slot = registerTempFile(tmp);
  struct Unregister {
    int slot;
    ~Unregister() { unregisterTempFile(slot); }
  } unregister{slot};
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot write '" + tmp + "': " + std::strerror(errno));
  try {
    writeAll(fd, content, tmp);
    if (keepMode) ::fchmod(fd, mode & 07777);
  } catch (...) {
    ::close(fd);
    std::remove(tmp.c_str());
    throw;
  }
  ::fsync(fd);  // the data is on disk before the rename makes it visible
  ::close(fd);
  fs::rename(tmp, t, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error("cannot rename '" + tmp + "' to '" + target + "': " + ec.message());
  }
}

// The file a dangling symbolic link (chain) points at, to be created.
std::string danglingTarget(const std::string& link) {
  fs::path p(link);
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) throw Error("cannot resolve symbolic link '" + link + "': " + ec.message());
    p = to.is_absolute() ? to : p.parent_path() / to;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return p.string();  // the missing end of the chain
    if (!S_ISLNK(st.st_mode)) return p.string();
  }
  throw Error("cannot resolve symbolic link '" + link + "': too many levels");
}

}  // namespace

void writeFileAtomically(const std::string& path, const std::string& content) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0) {
    if (errno != ENOENT) throw Error("cannot write '" + path + "': " + std::strerror(errno));
    replaceAtomically(path, content, 0, false);  // a new file
    return;
  }
  if (S_ISREG(lst.st_mode)) return replaceAtomically(path, content, lst.st_mode, true);
  if (S_ISCHR(lst.st_mode) || S_ISFIFO(lst.st_mode)) return writeThrough(path, content);
  if (!S_ISLNK(lst.st_mode)) throw Error("cannot write '" + path + "': it is " + kindOf(lst.st_mode));
  // A symbolic link: whatever it finally points at, the link itself stays.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) throw Error("cannot write '" + path + "': " + std::strerror(errno));
    replaceAtomically(danglingTarget(path), content, 0, false);
    return;
  }
  // Through the link itself (not a resolved name): /dev/stdout -> /proc/self/fd/1 names
  // a pipe as "pipe:[N]", which is no path.
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return writeThrough(path, content);
  if (!S_ISREG(st.st_mode))
    throw Error("cannot write '" + path + "': the symbolic link points at " + kindOf(st.st_mode));
  char real[PATH_MAX];
  if (!::realpath(path.c_str(), real)) throw Error("cannot resolve '" + path + "': " + std::strerror(errno));
  replaceAtomically(real, content, st.st_mode, true);
}

void checkWritable(const std::string& path, const std::string& what) {
  auto fail = [&](const std::string& why) { throw Error(what + " '" + path + "': " + why); };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail("is a directory");
    if (::access(path.c_str(), W_OK) != 0) fail(std::string("not writable: ") + std::strerror(errno));
    if (S_ISREG(st.st_mode)) {
      // Replacing it takes a temporary file and a rename in its directory.
      char real[PATH_MAX];
      if (!::realpath(path.c_str(), real)) fail(std::string("cannot resolve: ") + std::strerror(errno));
      const std::string dir = fs::path(real).parent_path().string();
      if (::access(dir.c_str(), W_OK | X_OK) != 0)
        fail("its directory '" + dir + "' is not writable: " + std::strerror(errno));
    } else if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {
      fail("is " + kindOf(st.st_mode));
    }
    return;
  }
  if (errno != ENOENT) fail(std::strerror(errno));  // e.g. ENOTDIR: a component is a file
  // A new file: the nearest existing ancestor must be a writable directory (the write
  // creates the missing ones below it).
  fs::path dir = fs::path(path).parent_path();
  while (true) {
    const std::string d = dir.empty() ? "." : dir.string();
    if (::stat(d.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) fail("'" + d + "' is not a directory");
      if (::access(d.c_str(), W_OK | X_OK) != 0) fail("directory '" + d + "' is not writable: " + std::strerror(errno));
      return;
    }
    if (errno != ENOENT) fail("'" + d + "': " + std::strerror(errno));
    if (dir.empty() || dir == dir.root_path()) fail("no existing directory above it");
    dir = dir.parent_path();
  }
}

bool readFile(const std::string& path, std::string& content) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  content = ss.str();
  return static_cast<bool>(in) || in.eof();
}

}  // namespace sdspeed
