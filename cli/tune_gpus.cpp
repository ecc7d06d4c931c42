// sdspeed tune --device gpus: one shard per GPU of the host (CPU devices left out),
// run in parallel, then merged into the unsharded sweep caches and database.
//
// Child processes, not threads: each GPU's shard is exactly the command a cluster
// node would run (`tune --device P:D --shard K/G`), so this path is the tested
// sharding path and nothing else; a driver crash or a GPU that hangs takes its own
// shard down, not the others; and OpenCL drivers differ in how well several contexts
// in one process overlap. Each child's output is prefixed with its shard.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/tune_shared.h"
#include "runtime/atomic_file.h"
#include "runtime/device_key.h"
#include "runtime/error.h"
#include "tuning/db_merge.h"
#include "tuning/shard.h"

namespace sdspeed {
namespace {

struct Child {
  pid_t pid = -1;
  int fd = -1;
  std::string prefix, pending;
};

Child spawn(const std::vector<std::string>& argv, const std::string& prefix) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) throw RunFailure("tune --device gpus: cannot create a pipe");
  const pid_t pid = ::fork();
  if (pid < 0) throw RunFailure("tune --device gpus: cannot fork");
  if (pid == 0) {
    // PoCL with its kernel cache off (POCL_KERNEL_CACHE=0) still writes compiler files
    // under POCL_CACHE_DIR, and two processes building one program there delete each
    // other's: each shard gets a folder of its own (PoCL creates it).
    if (const char* off = std::getenv("POCL_KERNEL_CACHE"); off && std::string(off) == "0") {
      const char* dir = std::getenv("POCL_CACHE_DIR");
      ::setenv("POCL_CACHE_DIR", (std::string(dir ? dir : "/tmp/sdspeed-pocl") + "/shard-" + std::to_string(::getpid())).c_str(), 1);
    }
    ::dup2(pipefd[1], STDOUT_FILENO);
    ::dup2(pipefd[1], STDERR_FILENO);
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    ::execv("/proc/self/exe", cargv.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  return {pid, pipefd[0], prefix, ""};
}

// Copies every child's output to ours, line by line with its prefix, until all close.
void relay(std::vector<Child>& children) {
  for (;;) {
    std::vector<pollfd> fds;
    for (auto& c : children)
      if (c.fd >= 0) fds.push_back({c.fd, POLLIN, 0});
    if (fds.empty()) return;
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    for (auto& c : children) {
      if (c.fd < 0) continue;
      char buf[4096];
      const ssize_t n = ::read(c.fd, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        if (!c.pending.empty()) std::cout << c.prefix << c.pending << "\n";
        ::close(c.fd);
        c.fd = -1;
        continue;
      }
      if (n < 0) continue;
      c.pending.append(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = c.pending.find_first_of("\n\r")) != std::string::npos;) {
        if (nl > 0) std::cout << c.prefix << c.pending.substr(0, nl) << "\n";
        c.pending.erase(0, nl + 1);
      }
      std::cout << std::flush;
    }
  }
}

}  // namespace

int tuneOnGpus(const std::vector<std::string>& argv, const Args& args) {
  if (args.has("shard")) throw Error("--device gpus makes its own shards (one per GPU): drop --shard");
  if (args.has("replay")) throw Error("--device gpus has no use with --replay");
  std::vector<DeviceInfo> gpus;
  std::string found;
  const auto devices = listDevices();
  for (const auto& d : devices) {
    found += (found.empty() ? "" : ", ") + d.name + " (" + d.typeName() + ")";
    if (d.isGpu()) gpus.push_back(d);
  }
  // Test hook: SDSPEED_TEST_GPUS=P:D,P:D,... stands for the host's GPUs (a device may
  // be listed twice), so tests/test_shard_cli.cpp runs this path on PoCL's CPU device.
  if (const char* fake = std::getenv("SDSPEED_TEST_GPUS")) {
    gpus.clear();
    std::stringstream ss(fake);
    for (std::string index; std::getline(ss, index, ',');) gpus.push_back(selectDevice(devices, index));
  }
  if (gpus.empty())
    throw Error("--device gpus: no GPU among this host's OpenCL devices (found: " + (found.empty() ? "none" : found) +
                ")");
  const std::string key = gpus.front().key();
  for (const auto& g : gpus)
    if (g.key() != key)
      throw Error("--device gpus: the GPUs have different device keys (" + key + ", " + g.key() +
                  "): their measurements cannot share one database; run --device P:D per model");
  const std::string sweepDir = args.get("sweep-dir", "results/sweeps"), dbDir = args.get("db-dir", "configs/tuned");
  const std::string dbPath = dbDir + "/" + key + ".yaml";
  checkWritable(dbPath, "--db-dir");
  // Legacy-named files (device_key.h) move here, once, before the shards start: the
  // children would otherwise race to rename the same folder.
  migrateKeyedPath(sweepDir, key, "");
  migrateKeyedPath(dbDir, key, ".yaml");
  const int n = static_cast<int>(gpus.size());
  if (n == 1) {
    // One GPU: no shards to merge; the same as --device P:D.
    std::vector<std::string> one;
    for (size_t i = 0; i < argv.size(); ++i)
      if (argv[i] == "--device" && i + 1 < argv.size()) ++i;
      else if (argv[i].rfind("--device=", 0) != 0) one.push_back(argv[i]);
    one.push_back("--device");
    one.push_back(gpus.front().index());
    return cmdTune(one);
  }
  std::cout << "tune --device gpus: " << n << " GPUs (" << key << "), one shard each\n" << std::flush;
  std::vector<Child> children;
  for (int k = 1; k <= n; ++k) {
    std::vector<std::string> childArgv = {"sdspeed", "tune"};
    for (size_t i = 0; i < argv.size(); ++i) {
      if (argv[i] == "--device" && i + 1 < argv.size()) {
        ++i;
        continue;
      }
      if (argv[i].rfind("--device=", 0) == 0) continue;
      childArgv.push_back(argv[i]);
    }
    const Shard shard{k, n};
    for (const std::string& a : {std::string("--device"), gpus[k - 1].index(), std::string("--shard"), shard.text()})
      childArgv.push_back(a);
    children.push_back(spawn(childArgv, "[gpu " + gpus[k - 1].index() + " shard " + shard.text() + "] "));
  }
  relay(children);
  int worst = 0;
  std::string failed;
  for (int k = 1; k <= n; ++k) {
    int status = 0;
    ::waitpid(children[k - 1].pid, &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && code != 3) failed += (failed.empty() ? "" : ", ") + std::to_string(k) + " (exit " + std::to_string(code) + ")";
    worst = std::max(worst, code);
  }
  if (!failed.empty())
    throw RunFailure("tune --device gpus: shard " + failed + " failed; the shards' files are kept, and the same "
                     "command resumes from their sweep caches");
  // Merge: the shards' databases into the unsharded one (with what it held), the
  // shards' sweep caches into <op>.csv; the shard files are then contained in those.
  namespace fs = std::filesystem;
  std::vector<std::string> dbs, shardFiles;
  if (fs::exists(dbPath)) dbs.push_back(dbPath);
  for (int k = 1; k <= n; ++k) {
    const std::string p = shardPath(dbPath, Shard{k, n});
    if (fs::exists(p)) dbs.push_back(p), shardFiles.push_back(p);
  }
  std::vector<std::string> sweeps;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(sweepDir + "/" + key, ec)) {
    const std::string name = f.path().filename().string();
    for (int k = 1; k <= n; ++k)
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".csv") == 0 &&
          name.find(Shard{k, n}.suffix() + ".csv") != std::string::npos) {
        sweeps.push_back(f.path().string());
        shardFiles.push_back(f.path().string());
        shardFiles.push_back(f.path().string() + ".lock");  // its tune's sweep lock (runtime/file_lock.h)
        const std::string main = sweepDir + "/" + key + "/" + name.substr(0, name.find('.')) + ".csv";
        if (fs::exists(main) && std::find(sweeps.begin(), sweeps.end(), main) == sweeps.end()) sweeps.push_back(main);
      }
  }
  if (!sweeps.empty()) {
    auto groups = mergeSweeps(sweeps);
    for (const auto& p : writeMergedSweeps(groups, sweepDir)) std::cout << "merged sweep cache: " << p << "\n";
  }
  // The shards recorded this build's kernel source hashes; where the unsharded file holds
  // another for a family (a kernel changed since its tune), its entries are stamped with
  // their own older hash first (TuningDatabase::setFamilyHash, as one tune would), so the
  // merge takes the shards' re-tuned copies and keeps the rest visibly stale instead of
  // refusing the two hashes.
  if (fs::exists(dbPath) && dbs.size() > 1) {
    TuningDatabase main = TuningDatabase::load(dbPath);
    const auto recorded = main.sourceHashes;
    for (size_t i = 1; i < dbs.size(); ++i)
      for (const auto& [family, hash] : TuningDatabase::load(dbs[i]).sourceHashes) main.setFamilyHash(family, hash);
    if (main.sourceHashes != recorded) {
      const std::string restamped = dbPath + ".restamped";
      main.save(restamped);
      dbs[0] = restamped;
      shardFiles.push_back(restamped);
    }
  }
  if (!dbs.empty()) {
    mergeDatabases(dbs).save(dbPath);
    std::cout << "merged database: " << dbPath << "\n";
  }
  for (const auto& f : shardFiles) fs::remove(f, ec);
  return worst;
}

}  // namespace sdspeed
