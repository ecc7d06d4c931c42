// The per-device, per-op sweep cache: every measured point appended as one CSV row
// (all parameters as columns, status, times, error, provenance). A sweep that is
// killed and started again skips the points already measured: rows are flushed and
// fsync'ed one at a time, and a trailing half-written row (no final newline) is
// dropped when the file is opened, so it can never be read back as data.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/file_lock.h"
#include "tuning/status.h"

namespace sdspeed {

struct SweepRow {
  std::string instance;   // OpInstance::text()
  std::string variant;
  std::string params;     // ParamPoint::text()
  Status status = Status::Ok;
  double medianUs = 0, minUs = 0, maxUs = 0;
  int repeats = 0;
  double gbPerSec = 0;
  std::string message;
  // Provenance.
  std::string device, driver, sourceHash, commit, buildOptions;

  // What makes a measurement reusable on resume.
  std::string key() const {
    return instance + "|" + variant + "|" + params + "|" + device + "|" + driver + "|" + sourceHash + "|" + buildOptions;
  }
};

class SweepCache {
 public:
  // Opens (creating if absent) PATH; paramNames: the family's parameter names, one
  // column each. Throws Error naming the file and line for a malformed cache, or for
  // a file that exists but cannot be read. readOnly (replay): never creates or
  // rewrites the file, and a missing file is an error. A writable cache holds PATH.lock
  // (runtime/file_lock.h) while it lives: a second process opening the same cache fails
  // at once with one Error naming the file and the holder's pid.
  SweepCache(std::string path, std::vector<std::string> paramNames, bool readOnly = false);

  const std::vector<SweepRow>& rows() const { return rows_; }
  std::optional<SweepRow> find(const std::string& key) const;
  // Appends, flushes and fsyncs one row.
  void append(const SweepRow& row);
  const std::string& path() const { return path_; }
  int droppedPartialRows() const { return dropped_; }

  static std::vector<std::string> header(const std::vector<std::string>& paramNames);
  // A whole cache file's text: the header, then one line per row (what rewrite()
  // writes; `sdspeed db merge --sweeps` writes merged caches with it).
  static std::string fileText(const std::vector<SweepRow>& rows, const std::vector<std::string>& paramNames);

 private:
  void rewrite();  // the whole file, atomically, with the current header

  std::string path_;
  std::unique_ptr<FileLock> lock_;  // before the rows: taken before the file is read
  std::vector<std::string> paramNames_;
  std::vector<SweepRow> rows_;
  std::map<std::string, size_t> index_;
  bool readOnly_ = false;
  int dropped_ = 0;
  int appended_ = 0;  // rows appended by this process (test hook)
};

Status parseStatus(const std::string& s);  // throws Error for an unknown name

}  // namespace sdspeed
