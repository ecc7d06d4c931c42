#include "tuning/sweep_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <set>
#include <sstream>

#include "kernels/family.h"
#include "runtime/atomic_file.h"
#include "runtime/opencl/cl_error.h"
#include "tuning/csv.h"

namespace sdspeed {
namespace {

const std::vector<std::string> kFixed = {"instance", "variant", "params", "status", "median_us", "min_us",
                                         "max_us", "repeats", "gb_per_s", "message", "device", "driver",
                                         "source_hash", "commit", "build_options"};

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// One physical line per row: a kill mid-row must be recoverable by cutting at the
// last newline, so newlines inside fields (compiler logs) become " | ".
std::string oneLine(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') continue;
    if (s[i] == '\n') {
      if (i + 1 < s.size()) out += " | ";
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> toFields(const SweepRow& r, const std::vector<std::string>& paramNames) {
  std::vector<std::string> f = {r.instance, r.variant, r.params, statusName(r.status),
                                r.status == Status::Ok ? num(r.medianUs) : "",
                                r.status == Status::Ok ? num(r.minUs) : "",
                                r.status == Status::Ok ? num(r.maxUs) : "",
                                r.status == Status::Ok ? std::to_string(r.repeats) : "",
                                r.status == Status::Ok ? num(r.gbPerSec) : "",
                                oneLine(r.message), r.device, r.driver, r.sourceHash, r.commit, r.buildOptions};
  // One column per parameter; empty where the variant has no such parameter.
  std::map<std::string, std::string> values;
  std::stringstream ss(r.params);
  for (std::string kv; std::getline(ss, kv, ',');)
    if (auto eq = kv.find('='); eq != std::string::npos) values[kv.substr(0, eq)] = kv.substr(eq + 1);
  for (const auto& p : paramNames) f.push_back(values.count(p) ? values[p] : "");
  return f;
}

double toDouble(const std::string& s, const std::string& where) {
  if (s.empty()) return 0;
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error(where + ": bad number '" + s + "'");
}

}  // namespace

Status parseStatus(const std::string& s) {
  for (Status st : {Status::Ok, Status::Unsupported, Status::BuildFailed, Status::RunFailed, Status::Inaccurate})
    if (s == statusName(st)) return st;
  throw Error("unknown status '" + s + "'");
}

std::vector<std::string> SweepCache::header(const std::vector<std::string>& paramNames) {
  std::vector<std::string> h = kFixed;
  for (const auto& p : paramNames) h.push_back("param_" + p);
  return h;
}

SweepCache::SweepCache(std::string path, std::vector<std::string> paramNames, bool readOnly)
    : path_(std::move(path)), paramNames_(std::move(paramNames)), readOnly_(readOnly) {
  std::string text;
  std::error_code ec;
  if (!readOnly_) {
    // The lock file beside the cache needs its folder (the rewrite below would make it too).
    const auto dir = std::filesystem::path(path_).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    lock_ = std::make_unique<FileLock>(path_, "sweep cache");
  }
  const bool exists = std::filesystem::exists(path_, ec);
  if (readOnly && !exists) throw Error("cannot read sweep recording " + path_ + " (no such file)");
  if (exists && !readFile(path_, text)) throw Error("cannot read sweep cache " + path_);
  if (text.empty()) {
    if (!readOnly_) rewrite();
    return;
  }
  // A row is complete only with its newline: a kill mid-write leaves a tail without one.
  bool dirty = false;
  if (text.back() != '\n') {
    text.erase(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
    dropped_ = 1;
    dirty = true;
  }
  std::vector<std::vector<std::string>> table;
  try {
    table = csvParse(text);
  } catch (const Error& e) {
    throw Error("sweep cache " + path_ + ": " + e.what());
  }
  if (table.empty()) {
    rewrite();
    return;
  }
  const auto& head = table.front();
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < head.size(); ++i) col[head[i]] = i;
  for (const auto& name : kFixed)
    if (!col.count(name)) throw Error("sweep cache " + path_ + ": header lacks column '" + name + "'");
  if (head != header(paramNames_)) dirty = true;  // the family's parameters changed: rewrite
  for (size_t line = 1; line < table.size(); ++line) {
    const auto& f = table[line];
    const std::string where = "sweep cache " + path_ + " line " + std::to_string(line + 1);
    if (f.size() != head.size())
      throw Error(where + ": " + std::to_string(f.size()) + " fields, header has " + std::to_string(head.size()));
    auto get = [&](const char* name) { return f[col.at(name)]; };
    SweepRow r;
    r.instance = get("instance");
    r.variant = get("variant");
    r.params = get("params");
    try {
      r.status = parseStatus(get("status"));
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
    r.medianUs = toDouble(get("median_us"), where);
    r.minUs = toDouble(get("min_us"), where);
    r.maxUs = toDouble(get("max_us"), where);
    r.repeats = static_cast<int>(toDouble(get("repeats"), where));
    r.gbPerSec = toDouble(get("gb_per_s"), where);
    r.message = get("message");
    r.device = get("device");
    r.driver = get("driver");
    r.sourceHash = get("source_hash");
    r.commit = get("commit");
    r.buildOptions = get("build_options");
    index_[r.key()] = rows_.size();
    rows_.push_back(std::move(r));
  }
  if (dirty && !readOnly_) rewrite();
}

std::optional<SweepRow> SweepCache::find(const std::string& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return rows_[it->second];
}

std::string SweepCache::fileText(const std::vector<SweepRow>& rows, const std::vector<std::string>& paramNames) {
  std::string text = csvRow(header(paramNames));
  for (const auto& r : rows) text += csvRow(toFields(r, paramNames));
  return text;
}

void SweepCache::rewrite() { writeFileAtomically(path_, fileText(rows_, paramNames_)); }

void SweepCache::append(const SweepRow& row) {
  if (readOnly_) throw Error("sweep cache " + path_ + " is open read-only");
  const std::string line = csvRow(toFields(row, paramNames_));
  // Test hook: SDSPEED_TEST_KILL_AT_ROW=N kills this process (SIGKILL) when it is
  // about to append its N-th row, after writing half of it if SDSPEED_TEST_KILL_MIDROW
  // is set. Lets tests/test_tuner.cpp kill a sweep at deterministic points.
  static const char* killAt = std::getenv("SDSPEED_TEST_KILL_AT_ROW");
  const bool kill = killAt && std::atoi(killAt) == appended_ + 1;
  const size_t n = kill && std::getenv("SDSPEED_TEST_KILL_MIDROW") ? line.size() / 2 : (kill ? 0 : line.size());
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) throw Error("cannot append to sweep cache " + path_);
  ssize_t done = 0;
  while (done < static_cast<ssize_t>(n)) {
    ssize_t w = ::write(fd, line.data() + done, n - done);
    if (w <= 0) {
      ::close(fd);
      throw Error("cannot append to sweep cache " + path_ + " (disk full?)");
    }
    done += w;
  }
  ::fsync(fd);
  ::close(fd);
  if (kill) ::raise(SIGKILL);
  ++appended_;
  index_[row.key()] = rows_.size();
  rows_.push_back(row);
}

}  // namespace sdspeed
