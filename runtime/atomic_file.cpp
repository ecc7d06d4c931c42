#include "runtime/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/cl_error.h"

namespace sdspeed {

void writeFileAtomically(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec) throw Error("cannot create directory '" + target.parent_path().string() + "': " + ec.message());
  // A name no other process or thread uses: several threads may store the same file.
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()) % 100000) + "." +
                    std::to_string(counter++);
  {
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) throw Error("cannot write '" + tmp + "'");
    size_t done = 0;
    while (done < content.size()) {
      ssize_t w = ::write(fd, content.data() + done, content.size() - done);
      if (w <= 0) {
        ::close(fd);
        std::remove(tmp.c_str());
        throw Error("cannot write '" + tmp + "' (disk full?)");
      }
      done += static_cast<size_t>(w);
    }
    ::fsync(fd);  // the data is on disk before the rename makes it visible
    ::close(fd);
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
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
