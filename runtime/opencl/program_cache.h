// Programs are built from full source text (the #define parameters are part of the
// text) plus build options, and cached twice: in memory for the process, and on disk
// as device binaries keyed by device + driver + source + options, so a re-run of the
// same sweep does not compile again. A build failure throws with the compiler log.
// Disk entries carry a checked header (runtime/program_entry.h): a damaged one is
// reported in one warning line, deleted and rebuilt, never handed to the driver.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/opencl/cl_handle.h"
#include "runtime/opencl/device.h"

namespace sdspeed {

struct ProgramRecord {  // what `check --dump-kernels` writes
  std::string label;    // e.g. "groupnorm.one_pass"
  std::string key;      // cache key (hex)
  std::string source;
  std::string options;
};

struct ProgramCacheStats {
  int memoryHits = 0;
  int diskHits = 0;
  int builds = 0;
};

class ProgramCache {
 public:
  // cacheDir empty: no disk cache.
  ProgramCache(cl_context ctx, const DeviceInfo& dev, std::string cacheDir);

  // Thread-safe; builds of different programs run concurrently from several threads,
  // and a thread asking for a program another thread is building waits for that build
  // instead of compiling it a second time (a sweep's builder threads and its timing
  // thread often ask for the same point at once; a GPU compiler can take seconds).
  cl_program get(const std::string& label, const std::string& source, const std::string& options);

  std::string keyFor(const std::string& source, const std::string& options) const;
  const std::string& cacheDir() const { return dir_; }
  ProgramCacheStats stats() const;
  std::vector<ProgramRecord> records() const;

  // $SDSPEED_CACHE_DIR, else $XDG_CACHE_HOME/sdspeed, else ~/.cache/sdspeed.
  static std::string defaultCacheDir();

 private:
  ClProgram buildFromSource(const std::string& label, const std::string& source,
                            const std::string& options);
  ClProgram loadBinary(const std::string& path, const std::string& key, const std::string& options);
  void storeBinary(cl_program program, const std::string& path, const std::string& key);
  std::string buildLog(cl_program program) const;

  cl_context ctx_;
  DeviceInfo dev_;
  std::string dir_;
  mutable std::mutex mu_;
  std::condition_variable built_;
  std::set<std::string> building_;  // keys being built now
  std::map<std::string, ClProgram> programs_;
  std::vector<ProgramRecord> records_;
  ProgramCacheStats stats_;
};

}  // namespace sdspeed
