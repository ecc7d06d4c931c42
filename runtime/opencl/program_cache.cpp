#include "runtime/opencl/program_cache.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "runtime/atomic_file.h"
#include "runtime/opencl/cl_error.h"
#include "runtime/hash.h"
#include "runtime/program_entry.h"

namespace sdspeed {

ProgramCache::ProgramCache(cl_context ctx, const DeviceInfo& dev, std::string cacheDir)
    : ctx_(ctx), dev_(dev), dir_(std::move(cacheDir)) {}

std::string ProgramCache::defaultCacheDir() {
  if (const char* d = std::getenv("SDSPEED_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/sdspeed";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/sdspeed";
  return {};
}

std::string ProgramCache::keyFor(const std::string& source, const std::string& options) const {
  return Fnv1a()
      .add(dev_.platformName)
      .add(dev_.platformVersion)
      .add(dev_.name)
      .add(dev_.driverVersion)
      .add(source)
      .add(options)
      .hex();
}

std::string ProgramCache::buildLog(cl_program program) const {
  size_t n = 0;
  if (clGetProgramBuildInfo(program, dev_.id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS)
    return "(no build log)";
  std::string log(n, '\0');
  clGetProgramBuildInfo(program, dev_.id, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

ClProgram ProgramCache::buildFromSource(const std::string& label, const std::string& source,
                                        const std::string& options) {
  const char* text = source.c_str();
  size_t len = source.size();
  cl_int err = CL_SUCCESS;
  ClProgram program(clCreateProgramWithSource(ctx_, 1, &text, &len, &err));
  clCheck(err, "clCreateProgramWithSource");
  err = clBuildProgram(program.get(), 1, &dev_.id, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS)
    throw ClError("clBuildProgram", err, "building " + label + ":\n" + buildLog(program.get()));
  return program;
}

namespace {

// One line on stderr, then the entry is deleted: it is rebuilt and stored again.
void discardEntry(const std::string& path, const std::string& why) {
  std::cerr << "sdspeed: warning: program cache entry " << path << " is unusable (" << why
            << "); deleted, rebuilding\n";
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

}  // namespace

ClProgram ProgramCache::loadBinary(const std::string& path, const std::string& key, const std::string& options) {
  std::string bytes;
  if (!readFile(path, bytes)) return {};  // no entry yet
  // Checked before the driver sees it: some drivers crash on a damaged binary.
  const DecodedProgramEntry entry = decodeProgramEntry(bytes, key);
  if (!entry.ok()) {
    discardEntry(path, entry.error);
    return {};
  }
  const unsigned char* data = reinterpret_cast<const unsigned char*>(entry.binary.data());
  size_t len = entry.binary.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  ClProgram program(clCreateProgramWithBinary(ctx_, 1, &dev_.id, &len, &data, &status, &err));
  if (err != CL_SUCCESS || status != CL_SUCCESS || !program) {
    discardEntry(path, "the driver rejects the binary");
    return {};
  }
  if (clBuildProgram(program.get(), 1, &dev_.id, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    discardEntry(path, "the driver cannot build the binary");
    return {};
  }
  return program;
}

void ProgramCache::storeBinary(cl_program program, const std::string& path, const std::string& key) {
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) !=
          CL_SUCCESS ||
      size == 0)
    return;  // the driver offers no binary: the memory cache still works
  std::string bin(size, '\0');
  unsigned char* ptr = reinterpret_cast<unsigned char*>(bin.data());
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS)
    return;
  try {
    writeFileAtomically(path, encodeProgramEntry(key, bin));
  } catch (const Error&) {
    // A read-only or full cache directory must not fail the run; it only costs rebuilds.
  }
}

cl_program ProgramCache::get(const std::string& label, const std::string& source,
                             const std::string& options) {
  const std::string key = keyFor(source, options);
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Wait while another thread builds this key; if its build failed, this thread
    // builds it again and throws the compiler log itself.
    built_.wait(lock, [&] { return building_.count(key) == 0; });
    auto it = programs_.find(key);
    if (it != programs_.end()) {
      ++stats_.memoryHits;
      return it->second.get();
    }
    building_.insert(key);
  }
  struct Done {  // clears the in-flight mark however the build ends
    ProgramCache& cache;
    const std::string& key;
    ~Done() {
      {
        std::lock_guard<std::mutex> lock(cache.mu_);
        cache.building_.erase(key);
      }
      cache.built_.notify_all();
    }
  } done{*this, key};
  // Build outside the lock so several threads compile in parallel.
  ClProgram program;
  bool fromDisk = false;
  const std::string path = dir_.empty() ? std::string() : dir_ + "/programs/" + key + ".bin";
  if (!path.empty()) {
    program = loadBinary(path, key, options);
    fromDisk = static_cast<bool>(program);
  }
  if (!program) {
    program = buildFromSource(label, source, options);
    if (!path.empty()) storeBinary(program.get(), path, key);
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Only this thread builds `key` (the others wait above), so the insert is new.
  auto it = programs_.emplace(key, std::move(program)).first;
  (fromDisk ? stats_.diskHits : stats_.builds)++;
  records_.push_back({label, key, source, options});
  return it->second.get();
}

ProgramCacheStats ProgramCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::vector<ProgramRecord> ProgramCache::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

}  // namespace sdspeed
