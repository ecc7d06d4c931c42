// Running the sdspeed executable from a test: captured stdout/stderr, exit code, a
// fresh program cache, and the one-line-error check every bad input must pass.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace sdspeed_test {

struct Result {
  int exitCode = -1;
  std::string out, err;
  std::vector<std::string> errLines() const {
    std::vector<std::string> lines;
    std::stringstream ss(err);
    std::string l;
    while (std::getline(ss, l)) lines.push_back(l);
    return lines;
  }
  std::string describe() const {
    return "exit " + std::to_string(exitCode) + "\n--- stderr:\n" + err + "--- stdout:\n" + out;
  }
};

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs sdspeed with args, the tests' program cache and captured output. Under CTest that
// is SDSPEED_CACHE_DIR, the build tree's cache every test process shares (tests/CMakeLists.txt):
// a fresh one per test rebuilt every program from source, about 15 s of PoCL compiling per
// run of the tiny model. Run by hand without it: a fresh directory, never the user's cache.
class Cli : public ::testing::Test {
 protected:
  Result run(const std::vector<std::string>& args) {
    const char* shared = std::getenv("SDSPEED_CACHE_DIR");
    const std::string cache = shared && *shared ? shared : cache_.path();
    std::string cmd = shellPrefix_ + "SDSPEED_CACHE_DIR=" + quote(cache) + " " + quote(SDSPEED_BIN);
    for (const auto& a : args) {
      cmd += ' ';
      cmd += quote(a);
    }
    const std::string outPath = io_.path() + "/stdout", errPath = io_.path() + "/stderr";
    cmd += " </dev/null >" + quote(outPath) + " 2>" + quote(errPath);
    const int status = std::system(cmd.c_str());
    Result r;
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(outPath);
    r.err = slurp(errPath);
    return r;
  }

  // Bad input: a non-zero exit and exactly one stderr line containing each phrase.
  void expectOneLineError(const std::vector<std::string>& args, const std::vector<std::string>& phrases) {
    std::string line = "sdspeed";
    for (const auto& a : args) line += " " + a;
    SCOPED_TRACE(line);
    const Result r = run(args);
    EXPECT_NE(r.exitCode, 0) << r.describe();
    EXPECT_LT(r.exitCode, 128) << "crashed: " << r.describe();
    const auto lines = r.errLines();
    ASSERT_EQ(lines.size(), 1u) << "want exactly one stderr line\n" << r.describe();
    for (const auto& p : phrases) EXPECT_NE(lines[0].find(p), std::string::npos) << "missing '" << p << "' in: " << lines[0];
  }

  TempDir cache_, io_;
  // Shell commands run before sdspeed (e.g. "ulimit -v 4000000; "), for tests that bound it.
  std::string shellPrefix_;
};


}  // namespace sdspeed_test
