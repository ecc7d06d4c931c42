#include "tuning/db_merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "kernels/registry.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace sdspeed {
namespace fs = std::filesystem;

std::vector<std::string> familyParamNames(const Family& fam) {
  std::set<std::string> names;
  for (const auto& v : fam.variants())
    for (const auto& p : v.params) names.insert(p.name);
  return {names.begin(), names.end()};
}

TuningDatabase mergeDatabases(const std::vector<std::string>& paths) {
  if (paths.empty()) throw Error("db merge needs at least one input database");
  TuningDatabase out;
  struct Item {
    OpInstance instance;
    std::string variant;
    TunedVariant v;
    std::string hash;  // the source hash its entry was tuned against (entryHash; "" unknown)
  };
  std::vector<Item> items;
  std::map<std::string, std::string> hashFrom;  // family -> the input that set its hash
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    const TuningDatabase db = TuningDatabase::load(path);
    if (i == 0) {
      out.deviceKey = db.deviceKey;
      out.deviceName = db.deviceName;
      out.driver = db.driver;
    } else if (db.deviceKey != out.deviceKey) {
      throw Error(path + ": device key '" + db.deviceKey + "' differs from '" + out.deviceKey + "' in " + paths[0]);
    } else if (db.driver != out.driver) {
      // Times under another driver are other measurements: keeping the faster of the
      // two would mix drivers in one entry.
      throw Error(path + ": driver '" + db.driver + "' differs from '" + out.driver + "' in " + paths[0]);
    }
    for (const auto& [family, hash] : db.sourceHashes) {
      auto [it, fresh] = out.sourceHashes.emplace(family, hash);
      if (fresh) hashFrom[family] = path;
      else if (it->second != hash)
        throw Error(path + ": kernel source hash of " + family + " '" + hash + "' differs from '" + it->second +
                    "' in " + hashFrom[family]);
    }
    for (const auto& e : db.entries())
      for (const auto& [name, v] : e.variants) items.push_back({e.instance, name, v, db.entryHash(e)});
  }
  // Canonical order: by instance text, then variant; a stable sort keeps the inputs'
  // order among equal times, so the first input wins a tie.
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    const std::string ta = a.instance.text(), tb = b.instance.text();
    return ta != tb ? ta < tb : a.variant < b.variant;
  });
  // Per instance, the copies tuned against the family's recorded hash (an input's
  // entryHash; an input that records none counts as kUnrecordedHash) are the ones kept
  // when there are any: a re-tuned entry is current, and an older source's times do not
  // choose its variant. Where every copy is stale the entry is merged from the copies of
  // the smallest stale hash alone and keeps that hash as its own, so the merge never makes
  // a stale entry look current, never mixes two sources' times in one entry, and its
  // output does not depend on the inputs' order.
  // An item's source: "" where it is current (its hash is the family's, or no hash is
  // recorded anywhere for it), else its stale hash (an input without one: kUnrecordedHash).
  auto sourceOf = [&](const Item& it) -> std::string {
    const auto f = out.sourceHashes.find(it.instance.family);
    if (f == out.sourceHashes.end()) return it.hash;  // only a hand-written stamp can set one
    const std::string h = it.hash.empty() ? TuningDatabase::kUnrecordedHash : it.hash;
    return h == f->second ? "" : h;
  };
  // Per instance, the one source merged: the smallest, "" (current) before any hash.
  std::map<std::string, std::string> chosen;
  for (const auto& it : items) {
    const std::string src = sourceOf(it);
    auto [c, fresh] = chosen.emplace(it.instance.text(), src);
    if (!fresh && src < c->second) c->second = src;
  }
  for (const auto& it : items) {
    const std::string& src = chosen.at(it.instance.text());
    if (sourceOf(it) != src) continue;
    out.record(it.instance, it.variant, it.v.params, it.v.medianUs, it.v.minUs);
    if (!src.empty()) out.setEntryHash(it.instance, src);
  }
  return out;
}

namespace {

// "<device-key>/<op>" of a cache file: its folder's name and its name up to the first dot.
std::string groupOf(const fs::path& file) {
  const std::string name = file.filename().string();
  return file.parent_path().filename().string() + "/" + name.substr(0, name.find('.'));
}

void addFile(const fs::path& file, std::map<std::string, std::vector<SweepRow>>& groups,
             std::map<std::string, std::set<std::string>>& seen) {
  const std::string group = groupOf(file), op = group.substr(group.find('/') + 1);
  const Family* fam = nullptr;
  try {
    fam = &findFamily(op);
  } catch (const Error& e) {
    throw Error("sweep cache " + file.string() + ": its name names no op (" + e.what() + ")");
  }
  const SweepCache cache(file.string(), familyParamNames(*fam), /*readOnly=*/true);
  auto& rows = groups[group];
  auto& keys = seen[group];
  for (const auto& r : cache.rows()) {
    if (r.instance.rfind(op + " ", 0) != 0)
      throw Error("sweep cache " + file.string() + ": row of '" + r.instance + "' is not a " + op + " instance");
    if (keys.insert(r.key()).second) rows.push_back(r);
  }
}

}  // namespace

std::map<std::string, std::vector<SweepRow>> mergeSweeps(const std::vector<std::string>& inputs) {
  if (inputs.empty()) throw Error("db merge --sweeps needs at least one input");
  std::map<std::string, std::vector<SweepRow>> groups;
  std::map<std::string, std::set<std::string>> seen;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<fs::path> files;  // sorted: the first-row-wins rule must not depend on the walk
      for (const auto& f : fs::recursive_directory_iterator(in, ec))
        if (f.is_regular_file() && f.path().extension() == ".csv") files.push_back(f.path());
      if (ec) throw Error("cannot read sweep folder " + in + ": " + ec.message());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) addFile(f, groups, seen);
    } else if (fs::exists(in, ec)) {
      addFile(in, groups, seen);
    } else {
      throw Error("sweep input " + in + ": no such file or folder");
    }
  }
  for (auto& [g, rows] : groups)
    std::stable_sort(rows.begin(), rows.end(), [](const SweepRow& a, const SweepRow& b) { return a.key() < b.key(); });
  return groups;
}

std::vector<std::string> writeMergedSweeps(const std::map<std::string, std::vector<SweepRow>>& groups,
                                           const std::string& outDir) {
  std::vector<std::string> written;
  for (const auto& [group, rows] : groups) {
    const std::string op = group.substr(group.find('/') + 1);
    const std::string path = outDir + "/" + group + ".csv";
    writeFileAtomically(path, SweepCache::fileText(rows, familyParamNames(findFamily(op))));
    written.push_back(path);
  }
  return written;
}

std::vector<std::string> compareDatabases(const TuningDatabase& a, const TuningDatabase& b) {
  std::map<std::string, std::set<std::string>> va, vb;
  for (const auto& e : a.entries())
    for (const auto& [name, v] : e.variants) va[e.instance.text()].insert(name);
  for (const auto& e : b.entries())
    for (const auto& [name, v] : e.variants) vb[e.instance.text()].insert(name);
  std::vector<std::string> diff;
  auto join = [](const std::set<std::string>& s) {
    std::string out;
    for (const auto& x : s) out += (out.empty() ? "" : ",") + x;
    return out;
  };
  for (const auto& [inst, vars] : va) {
    auto it = vb.find(inst);
    if (it == vb.end()) diff.push_back("only in the first: " + inst);
    else if (it->second != vars)
      diff.push_back("variants differ for " + inst + ": " + join(vars) + " vs " + join(it->second));
  }
  for (const auto& [inst, vars] : vb)
    if (!va.count(inst)) diff.push_back("only in the second: " + inst);
  return diff;
}

std::vector<std::string> compareSweepRows(const std::vector<SweepRow>& a, const std::vector<SweepRow>& b) {
  auto points = [](const std::vector<SweepRow>& rows) {
    std::set<std::string> s;
    for (const auto& r : rows) s.insert(r.instance + " | " + r.variant + " [" + r.params + "] " + statusName(r.status));
    return s;
  };
  const auto pa = points(a), pb = points(b);
  std::vector<std::string> diff;
  for (const auto& p : pa)
    if (!pb.count(p)) diff.push_back("only in the first: " + p);
  for (const auto& p : pb)
    if (!pa.count(p)) diff.push_back("only in the second: " + p);
  return diff;
}

}  // namespace sdspeed
