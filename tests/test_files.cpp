// Writing and reading files without silent damage (issue #19): writeFileAtomically
// respects what a path is (device node, FIFO, symbolic link, directory), checkWritable
// fails before a long run instead of after it, temporary files go away on SIGTERM,
// and the program cache's entry header rejects every kind of damaged entry.
// CPU only: the program cache on a real driver is tests/test_runtime.cpp.
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/atomic_file.h"
#include "runtime/host_memory.h"
#include "runtime/program_entry.h"
#include "runtime/temp_files.h"
#include "test_support.h"

using namespace sdspeed;
using sdspeed_test::errorMessage;
using sdspeed_test::TempDir;
namespace fs = std::filesystem;

namespace {

mode_t lmode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode;
}

std::string read(const std::string& path) {
  std::string s;
  EXPECT_TRUE(readFile(path, s)) << path;
  return s;
}

// Leftover `NAME.tmp.*` files in a directory.
int tempFilesIn(const std::string& dir) {
  int n = 0;
  for (const auto& f : fs::directory_iterator(dir)) n += f.path().filename().string().find(".tmp.") != std::string::npos;
  return n;
}

}  // namespace

// ---------------------------------------------------------------- writeFileAtomically

TEST(AtomicFile, NewAndRegularFilesAreReplacedKeepingTheirMode) {
  TempDir dir;
  const std::string path = dir.path() + "/sub/dir/out.txt";  // missing parents are made
  writeFileAtomically(path, "first");
  EXPECT_EQ(read(path), "first");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  writeFileAtomically(path, "second");
  EXPECT_EQ(read(path), "second");
  EXPECT_EQ(lmode(path) & 07777, 0600u);
  EXPECT_EQ(tempFilesIn(dir.path() + "/sub/dir"), 0);
}

// `-o /dev/null` must not replace the device node with a regular file. Run as root the
// test makes its own null device (mknod) rather than risk the real /dev/null if this
// regresses; as another user /dev/null itself is safe (renaming over it is refused).
TEST(AtomicFile, CharacterDeviceIsWrittenThroughAndStaysADevice) {
  TempDir dir;
  std::string node = "/dev/null";
  if (::geteuid() == 0) {
    node = dir.path() + "/null";
    if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) GTEST_SKIP() << "root without mknod";
  }
  writeFileAtomically(node, "discarded\n");
  EXPECT_TRUE(S_ISCHR(lmode(node))) << node << " is no longer a character device";
  EXPECT_EQ(tempFilesIn(fs::path(node).parent_path().string()), 0);
}

// A FIFO gets the content through itself (a reader waiting on it) and stays a FIFO. The
// content is larger than a pipe's buffer, so the write blocks until the reader thread
// drains it. Were the FIFO replaced by a renamed file, no writer would ever open it and
// the reader sees end-of-file once the write returned: the test fails, it does not hang.
TEST(AtomicFile, FifoIsWrittenThroughAndStaysAFifo) {
  TempDir dir;
  const std::string fifo = dir.path() + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string content(1 << 20, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>('a' + i % 26);
  // Opened here, non-blocking, so the writer's open finds a reader at once.
  const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  std::atomic<bool> writerDone{false};
  std::string got;
  std::thread reader([&] {
    char buf[65536];
    while (true) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, 50);
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        got.append(buf, static_cast<size_t>(n));
      } else if (writerDone) {
        // One last drain: the writer closed, whatever it wrote is in the pipe now.
        while (true) {
          const ssize_t m = ::read(fd, buf, sizeof buf);
          if (m <= 0) break;
          got.append(buf, static_cast<size_t>(m));
        }
        return;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  });
  EXPECT_NO_THROW(writeFileAtomically(fifo, content));
  writerDone = true;
  reader.join();
  ::close(fd);
  EXPECT_TRUE(S_ISFIFO(lmode(fifo))) << "the FIFO was replaced";
  EXPECT_EQ(got.size(), content.size());
  EXPECT_TRUE(got == content);
  EXPECT_EQ(tempFilesIn(dir.path()), 0);
}

TEST(AtomicFile, SymlinkStaysALinkAndItsTargetIsReplaced) {
  TempDir dir;
  fs::create_directories(dir.path() + "/real");
  const std::string target = dir.path() + "/real/data.txt";
  writeFileAtomically(target, "old");
  const std::string link = dir.path() + "/link.txt";
  fs::create_symlink("real/data.txt", link);  // relative, as `ln -s` makes them
  const std::string chain = dir.path() + "/chain.txt";
  fs::create_symlink("link.txt", chain);
  writeFileAtomically(chain, "new");
  EXPECT_TRUE(S_ISLNK(lmode(chain)));
  EXPECT_TRUE(S_ISLNK(lmode(link)));
  EXPECT_TRUE(S_ISREG(lmode(target)));
  EXPECT_EQ(read(target), "new");
  EXPECT_EQ(tempFilesIn(dir.path()), 0);
  EXPECT_EQ(tempFilesIn(dir.path() + "/real"), 0);
  // A dangling link: its target is created, the link kept.
  const std::string dangling = dir.path() + "/dangling.txt";
  fs::create_symlink("real/later.txt", dangling);
  writeFileAtomically(dangling, "made");
  EXPECT_TRUE(S_ISLNK(lmode(dangling)));
  EXPECT_EQ(read(dir.path() + "/real/later.txt"), "made");
}

TEST(AtomicFile, DirectoryTargetIsAnErrorNamingIt) {
  TempDir dir;
  const std::string sub = dir.path() + "/adir";
  fs::create_directories(sub);
  std::string msg = errorMessage([&] { writeFileAtomically(sub, "x"); });
  EXPECT_CONTAINS(msg, sub);
  EXPECT_CONTAINS(msg, "directory");
  EXPECT_TRUE(fs::is_directory(sub));
  // A link to a directory too.
  fs::create_directory_symlink(sub, dir.path() + "/dirlink");
  msg = errorMessage([&] { writeFileAtomically(dir.path() + "/dirlink", "x"); });
  EXPECT_CONTAINS(msg, dir.path() + "/dirlink");
  EXPECT_CONTAINS(msg, "directory");
}

// ---------------------------------------------------------------- checkWritable

TEST(CheckWritable, AcceptsWhatAWriteWouldSucceedOn) {
  TempDir dir;
  EXPECT_NO_THROW(checkWritable(dir.path() + "/new.json", "--report"));
  EXPECT_NO_THROW(checkWritable(dir.path() + "/missing/dirs/new.json", "--report"));
  writeFileAtomically(dir.path() + "/old.json", "{}");
  EXPECT_NO_THROW(checkWritable(dir.path() + "/old.json", "--report"));
  EXPECT_NO_THROW(checkWritable("/dev/null", "-o"));
}

// Under a regular file (`file/x`) nothing can be created, even by root, so this fails
// however the tests are run.
TEST(CheckWritable, RefusesWithThePathAndTheFlag) {
  TempDir dir;
  const std::string file = dir.path() + "/file";
  writeFileAtomically(file, "x");
  for (const std::string& bad : {file + "/x", file + "/deeper/x"}) {
    const std::string msg = errorMessage([&] { checkWritable(bad, "-o"); });
    EXPECT_CONTAINS(msg, "-o");
    EXPECT_CONTAINS(msg, bad);
    EXPECT_THROW(writeFileAtomically(bad, "x"), Error);  // the write it predicts fails too
  }
  const std::string msg = errorMessage([&] { checkWritable(dir.path(), "--report"); });
  EXPECT_CONTAINS(msg, "--report");
  EXPECT_CONTAINS(msg, "directory");
  if (::geteuid() != 0) {  // permission bits bind everyone but root
    fs::create_directories(dir.path() + "/ro");
    ::chmod((dir.path() + "/ro").c_str(), 0500);
    EXPECT_CONTAINS(errorMessage([&] { checkWritable(dir.path() + "/ro/out", "-o"); }), "not writable");
    ::chmod((dir.path() + "/ro").c_str(), 0700);
  }
}

// ---------------------------------------------------------------- temporary files on signals

TEST(TempFiles, RegistryRemovesLiveFilesOnly) {
  TempDir dir;
  const std::string live = dir.path() + "/a.tmp.1", done = dir.path() + "/b.tmp.2";
  writeFileAtomically(live, "x");
  writeFileAtomically(done, "y");
  const int a = registerTempFile(live), b = registerTempFile(done);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  unregisterTempFile(b);
  EXPECT_EQ(removeRegisteredTempFiles(), 1);
  unregisterTempFile(a);
  EXPECT_FALSE(fs::exists(live));
  EXPECT_TRUE(fs::exists(done));
  EXPECT_EQ(registerTempFile(std::string(5000, 'x')), -1);  // too long: not registered
}

// A real SIGTERM in a child process. The child cannot be stopped reliably in the middle
// of writeFileAtomically's own temp file (it is written in microseconds), so it does
// what that function does around the window: its first write installs the handlers,
// then a temp file is created and registered, and the signal arrives while it is live.
// The child must die of SIGTERM (the default action still runs) without the file.
TEST(TempFiles, SigtermRemovesTheLiveTempFileAndStillKills) {
  TempDir dir;
  const std::string tmp = dir.path() + "/out.json.tmp.child";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    try {
      writeFileAtomically(dir.path() + "/first.json", "{}");  // installs the handlers
      writeFileAtomically(tmp, "half a file");
    } catch (...) {
      ::_exit(3);
    }
    if (registerTempFile(tmp) < 0) ::_exit(4);
    ::kill(::getpid(), SIGTERM);
    ::_exit(5);  // not reached when the handler re-raises with the default action
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_FALSE(fs::exists(tmp)) << "temp file left behind";
  EXPECT_TRUE(fs::exists(dir.path() + "/first.json"));
}

// ---------------------------------------------------------------- program cache entries

TEST(ProgramEntry, RoundTripsAndRejectsEverySingleBitFlip) {
  const std::string key = "00112233aabbccdd";
  std::string binary;
  for (int i = 0; i < 200; ++i) binary.push_back(static_cast<char>(i * 7));
  const std::string entry = encodeProgramEntry(key, binary);
  ASSERT_EQ(entry.size(), kProgramEntryHeaderBytes + binary.size());
  const DecodedProgramEntry ok = decodeProgramEntry(entry, key);
  ASSERT_TRUE(ok.ok()) << ok.error;
  EXPECT_TRUE(ok.binary == binary);
  // Every bit of header and binary: FNV-1a with exact header fields catches each one.
  for (size_t byte = 0; byte < entry.size(); ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = entry;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      EXPECT_FALSE(decodeProgramEntry(bad, key).ok()) << "byte " << byte << " bit " << bit;
    }
}

TEST(ProgramEntry, NamesWhatIsWrong) {
  const std::string key = "00112233aabbccdd", binary = "a device binary";
  const std::string entry = encodeProgramEntry(key, binary);
  auto why = [&](const std::string& bytes, const std::string& k = "00112233aabbccdd") {
    return decodeProgramEntry(bytes, k).error;
  };
  EXPECT_CONTAINS(why(""), "shorter than its header");
  EXPECT_CONTAINS(why(entry.substr(0, 10)), "shorter than its header");
  EXPECT_CONTAINS(why(entry.substr(0, entry.size() - 1)), "header says");
  EXPECT_CONTAINS(why(entry + "x"), "header says");
  EXPECT_CONTAINS(why(std::string(entry.size(), '\0')), "no sdspeed header");
  EXPECT_CONTAINS(why("\x7f" "ELF older entries were the bare binary, no header at all"), "no sdspeed header");
  EXPECT_CONTAINS(why(entry, "ffffffffffffffff"), "another cache key");
  std::string flipped = entry;
  flipped.back() = static_cast<char>(flipped.back() ^ 1);
  EXPECT_CONTAINS(why(flipped), "checksum");
  EXPECT_CONTAINS(why(encodeProgramEntry(key, "")), "empty binary");
}

// The host memory the run's estimate is checked against: MemAvailable, lowered to the
// headroom under an address-space limit (ulimit -v), which is what a process so limited
// can still allocate.
TEST(HostMemory, MemAvailableAndTheAddressSpaceLimit) {
  const HostMemory free = availableHostMemory();
  EXPECT_GT(free.bytes, 0u);
  EXPECT_FALSE(free.what.empty());
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
  long pages = 0;
  {
    std::ifstream statm("/proc/self/statm");
    statm >> pages;
  }
  const uint64_t mapped = static_cast<uint64_t>(pages) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  rlimit lower = old;
  lower.rlim_cur = mapped + (256ull << 20);
  if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < lower.rlim_cur) GTEST_SKIP() << "already limited below the test's limit";
  ASSERT_EQ(setrlimit(RLIMIT_AS, &lower), 0);
  // qemu-user (the arm64 tests, scripts/test-arm64) accepts setrlimit(RLIMIT_AS) but does
  // not apply it (it needs the address space for the translated guest): nothing to test.
  rlimit now{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &now), 0);
  if (now.rlim_cur != lower.rlim_cur) {
    ASSERT_EQ(setrlimit(RLIMIT_AS, &old), 0);
    GTEST_SKIP() << "RLIMIT_AS is not applied in this process (qemu-user?)";
  }
  const HostMemory limited = availableHostMemory();
  ASSERT_EQ(setrlimit(RLIMIT_AS, &old), 0);  // the soft limit may go back up to the hard one
  EXPECT_LE(limited.bytes, 256ull << 20);
  EXPECT_GT(limited.bytes, 128ull << 20);
  EXPECT_CONTAINS(limited.what, "ulimit -v");
}
