// Small helpers shared by the unit tests: a fresh random seed per run (printed, so a
// failure can be replayed with SDSPEED_TEST_SEED=...), random non-zero data and
// self-deleting temporary directories.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "runtime/error.h"

// EXPECT_CONTAINS(text, part) without gmock.
#define EXPECT_CONTAINS(text, part)                                                     \
  do {                                                                                  \
    const std::string t_ = (text), p_ = (part);                                         \
    EXPECT_NE(t_.find(p_), std::string::npos) << "missing '" << p_ << "' in: " << t_; \
  } while (0)

namespace sdspeed_test {

// The compiler's IEEE binary16 type: GCC 12 has _Float16 in C++ on x86-64 but not on
// arm64 (scripts/test-arm64), where __fp16 is the same IEEE format.
#ifdef __aarch64__
using Half = __fp16;
#else
using Half = _Float16;
#endif


// PoCL keeps compiler files under POCL_CACHE_DIR in folders named by program hash;
// with POCL_KERNEL_CACHE=0 (CI) two processes building the same program at once
// delete each other's files and PoCL aborts ("Final linking of kernel ... failed").
// CTest runs test processes in parallel, so each gets a private folder, made before
// any OpenCL call of its translation unit (this inline variable is initialized
// before the statics defined after the #include) and removed at exit. Child
// processes (tests/test_cli.cpp) inherit it.
inline const std::string kPrivatePoclCacheDir = [] {
  std::string tmpl = (std::filesystem::temp_directory_path() / "sdspeed-pocl-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return std::string();
  ::setenv("POCL_CACHE_DIR", tmpl.c_str(), 1);
  static const std::string dir = tmpl;
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  });
  return tmpl;
}();

// The message of the sdspeed::Error fn throws; fails the test if it throws nothing
// or another type.
template <typename Fn>
std::string errorMessage(Fn&& fn) {
  try {
    fn();
  } catch (const sdspeed::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-sdspeed exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

// $SDSPEED_TEST_SEED if set, else a fresh seed from the OS.
inline uint64_t testSeed() {
  if (const char* s = std::getenv("SDSPEED_TEST_SEED"); s && *s) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// Values with |v| in [lo, hi] and a random sign: never zero, so an element that is
// not written (or written as zero) cannot pass for a correct one.
inline std::vector<float> randomNonZero(std::mt19937_64& rng, size_t n, float lo = 0.25f,
                                        float hi = 4.0f) {
  std::uniform_real_distribution<float> mag(lo, hi);
  std::bernoulli_distribution neg(0.5);
  std::vector<float> v(n);
  for (auto& x : v) x = neg(rng) ? -mag(rng) : mag(rng);
  return v;
}

// A fresh directory under the system temp dir, removed (with its contents) on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sdspeed-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace sdspeed_test

// Declares `rng` seeded with a fresh seed and records the seed in any failure message.
#define SDSPEED_SEEDED_RNG(rng)                                   \
  const uint64_t rng##_seed = ::sdspeed_test::testSeed();         \
  SCOPED_TRACE("SDSPEED_TEST_SEED=" + std::to_string(rng##_seed)); \
  std::mt19937_64 rng(rng##_seed)
