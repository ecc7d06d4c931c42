#include "tuning/database.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>

#include "runtime/atomic_file.h"
#include "kernels/registry.h"
#include "runtime/opencl/cl_error.h"
#include "runtime/device_key.h"
#include "tuning/nearest.h"
#include "tuning/yaml_file.h"

namespace sdspeed {
namespace {

template <typename T>
T need(const YAML::Node& parent, const std::string& key, const std::string& path) {
  const YAML::Node n = parent[key];
  if (!n) throw Error(yamlWhere(path, parent, key) + ": missing");
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw Error(yamlWhere(path, n, key) + ": wrong type");
  }
}

// "PATH line N" for a node without a key of its own (a variant's name).
std::string lineOf(const std::string& path, const YAML::Node& n) {
  return path + " line " + std::to_string(n.Mark().line + 1);
}

// The instance must name a known family with attributes it accepts, in the canonical
// form lookups compare against (Family::makeProblem, OpInstance::of): an entry spelled
// any other way (eps=0.00001, a missing attribute, .wf16 on a family without weights)
// would never match and be silently ignored.
void checkInstance(const OpInstance& inst) {
  const Family& fam = findFamily(inst.family);  // throws "unknown op 'x' (known: ...)"
  const OpInstance canonical = OpInstance::of(fam, *inst.problem(fam), inst.format);
  if (!(canonical == inst)) throw Error("not in canonical form (want '" + canonical.text() + "')");
}

// A stored time: a finite, positive number of microseconds.
double checkTime(const YAML::Node& parent, const std::string& key, const std::string& path) {
  const double t = need<double>(parent, key, path);
  if (!std::isfinite(t) || t <= 0) throw Error(yamlWhere(path, parent[key], key) + ": want a time > 0 microseconds");
  return t;
}

}  // namespace

TuningDatabase TuningDatabase::load(const std::string& path, const std::string& expectedKey) {
  const YAML::Node root = loadYamlFile(path, "tuning database");
  if (!root.IsMap()) throw Error(path + ": not a tuning database (want a mapping at the top)");
  if (need<int>(root, "format", path) != 1) throw Error(yamlWhere(path, root["format"], "format") + ": unknown version");
  TuningDatabase db;
  try {
    const YAML::Node dev = root["device"];
    if (!dev || !dev.IsMap()) throw Error(yamlWhere(path, root, "device") + ": missing or not a mapping");
    // Keys written before the API word read as OpenCL's (runtime/device_key.h).
    db.deviceKey = migrateDeviceKey(need<std::string>(dev, "key", path));
    db.deviceName = need<std::string>(dev, "name", path);
    db.driver = need<std::string>(dev, "driver", path);
    // Entries are measurements of one device: a file copied to another key's name
    // would hand that device parameters tuned elsewhere.
    if (!expectedKey.empty() && db.deviceKey != migrateDeviceKey(expectedKey))
      throw Error(yamlWhere(path, dev["key"], "key") + ": device key '" + db.deviceKey + "' is not this file's '" +
                  expectedKey + "'");
    if (const YAML::Node hashes = root["source_hashes"]) {
      if (!hashes.IsMap()) throw Error(yamlWhere(path, hashes, "source_hashes") + ": not a mapping");
      for (const auto& kv : hashes) db.sourceHashes[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
    const YAML::Node entries = root["entries"];
    if (entries && !entries.IsSequence()) throw Error(yamlWhere(path, entries, "entries") + ": not a list");
    std::map<std::string, int> seen;  // instance text -> line of its first entry
    for (const auto& e : entries) {
      TunedEntry t;
      const Family* fam = nullptr;
      const std::string text = need<std::string>(e, "instance", path);
      try {
        t.instance = OpInstance::parse(text);
        checkInstance(t.instance);
        fam = &findFamily(t.instance.family);
      } catch (const Error& err) {
        throw Error(yamlWhere(path, e["instance"], "instance") + ": " + err.what());
      }
      const int line = e["instance"].Mark().line + 1;
      if (auto [it, fresh] = seen.emplace(t.instance.text(), line); !fresh)
        throw Error(yamlWhere(path, e["instance"], "instance") + ": duplicate of the entry at line " +
                    std::to_string(it->second));
      if (const YAML::Node h = e["source_hash"]) {
        t.sourceHash = h.IsScalar() ? h.as<std::string>() : "";
        if (t.sourceHash.empty()) throw Error(yamlWhere(path, h, "source_hash") + ": want a kernel source hash");
      }
      t.best = need<std::string>(e, "best", path);
      const YAML::Node vars = e["variants"];
      if (!vars || !vars.IsMap()) throw Error(yamlWhere(path, e, "variants") + ": missing or not a mapping");
      for (const auto& kv : vars) {
        const std::string name = kv.first.as<std::string>();
        const VariantDef* def = nullptr;
        try {
          def = &fam->variant(name);
        } catch (const Error& err) {
          throw Error(lineOf(path, kv.first) + ": " + err.what());
        }
        if (t.variants.count(name)) throw Error(lineOf(path, kv.first) + ": variant " + name + " listed twice");
        TunedVariant v;
        v.params = need<std::string>(kv.second, "params", path);
        try {
          def->parsePoint(v.params);  // unknown parameter, value outside its list, constraint
        } catch (const Error& err) {
          throw Error(yamlWhere(path, kv.second["params"], "params") + ": " + err.what());
        }
        v.medianUs = checkTime(kv.second, "median_us", path);
        v.minUs = checkTime(kv.second, "min_us", path);
        if (v.minUs > v.medianUs)
          throw Error(yamlWhere(path, kv.second["min_us"], "min_us") + ": minimum above the median");
        t.variants[name] = v;
      }
      if (!t.variants.count(t.best)) throw Error(yamlWhere(path, e["best"], "best") + ": names no listed variant");
      db.entries_.push_back(std::move(t));
    }
  } catch (const YAML::Exception& e) {
    // A node of the wrong kind (a scalar where a mapping belongs, say).
    throw Error(path + " line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return db;
}

TuningDatabase TuningDatabase::loadOrEmpty(const std::string& path, const std::string& key, const DeviceCaps& dev) {
  std::string probe;
  if (readFile(path, probe)) return load(path, key);
  TuningDatabase db;
  db.deviceKey = key;
  db.deviceName = dev.name;
  db.driver = dev.driverVersion;
  return db;
}

void TuningDatabase::save(const std::string& path) const {
  YAML::Emitter out;
  out.SetDoublePrecision(7);
  out << YAML::Comment("sdspeed tuning database; format: configs/tuned/FORMAT.md");
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << 1;
  out << YAML::Key << "device" << YAML::Value << YAML::BeginMap << YAML::Key << "key" << YAML::Value << deviceKey
      << YAML::Key << "name" << YAML::Value << deviceName << YAML::Key << "driver" << YAML::Value << driver
      << YAML::EndMap;
  if (!sourceHashes.empty()) {
    out << YAML::Key << "source_hashes" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [family, hash] : sourceHashes) out << YAML::Key << family << YAML::Value << hash;
    out << YAML::EndMap;
  }
  out << YAML::Key << "entries" << YAML::Value << YAML::BeginSeq;
  for (const auto& e : entries_) {
    out << YAML::BeginMap << YAML::Key << "instance" << YAML::Value << e.instance.text();
    if (!e.sourceHash.empty()) out << YAML::Key << "source_hash" << YAML::Value << e.sourceHash;
    out << YAML::Key << "best" << YAML::Value << e.best << YAML::Key << "variants" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, v] : e.variants)
      out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "params"
          << YAML::Value << v.params << YAML::Key << "median_us" << YAML::Value << v.medianUs << YAML::Key
          << "min_us" << YAML::Value << v.minUs << YAML::EndMap;
    out << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  writeFileAtomically(path, std::string(out.c_str()) + "\n");
}

void TuningDatabase::setFamilyHash(const std::string& family, const std::string& hash) {
  // A file written before hashes were recorded says nothing of what its entries were
  // tuned against: they are stamped kUnrecordedHash, never equal to a real hash.
  const auto old = sourceHashes.find(family);
  const std::string before = old == sourceHashes.end() ? kUnrecordedHash : old->second;
  for (auto& e : entries_) {
    if (e.instance.family != family) continue;
    if (e.sourceHash.empty() && before != hash) e.sourceHash = before;
    if (e.sourceHash == hash) e.sourceHash.clear();
  }
  sourceHashes[family] = hash;
}

void TuningDatabase::setEntryHash(const OpInstance& inst, const std::string& hash) {
  for (auto& e : entries_)
    if (e.instance == inst) {
      const auto fam = sourceHashes.find(inst.family);
      e.sourceHash = (fam != sourceHashes.end() && fam->second == hash) ? "" : hash;
    }
}

std::string TuningDatabase::entryHash(const TunedEntry& e) const {
  if (!e.sourceHash.empty()) return e.sourceHash;
  const auto it = sourceHashes.find(e.instance.family);
  return it == sourceHashes.end() ? "" : it->second;
}

void TuningDatabase::erase(const OpInstance& inst) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [&](const TunedEntry& e) { return e.instance == inst; }),
                 entries_.end());
}

void TuningDatabase::record(const OpInstance& inst, const std::string& variant, const std::string& params,
                            double medianUs, double minUs) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const TunedEntry& e) { return e.instance == inst; });
  if (it == entries_.end()) {
    entries_.push_back({inst, variant, {}, {}});
    it = entries_.end() - 1;
  }
  auto& slot = it->variants[variant];
  if (slot.params.empty() || medianUs < slot.medianUs) slot = {params, medianUs, minUs};
  for (const auto& [name, v] : it->variants)
    if (v.medianUs < it->variants[it->best].medianUs) it->best = name;
}

TunedChoice TuningDatabase::lookup(const Family& fam, const OpInstance& inst, const std::string& variant) const {
  auto pick = [&](const TunedEntry& e, const std::string& source, TunedStep step) -> std::optional<TunedChoice> {
    const std::string v = variant.empty() ? e.best : variant;
    auto it = e.variants.find(v);
    if (it == e.variants.end()) return std::nullopt;
    return TunedChoice{v, it->second.params, source, it->second.medianUs, step};
  };
  for (const auto& e : entries_)
    if (e.instance == inst)
      if (auto c = pick(e, "exact", TunedStep::Exact)) return *c;
  // Nearest instance (tuning/nearest.h): the closest entry of the same family and storage
  // format whose structural attributes match, within kMaxNearestDistance, or at any
  // distance when all its attributes are identical (the rule before sizes were crossed:
  // on the H200's database it answered the nc4hw4 GroupNorm 2x2560x8x8 from 2x320x64x64,
  // distance 9, and no recording says the vote would do better). Ties go to the
  // smaller instance text, so the answer does not depend on the file's entry order;
  // distances within 1e-9 are ties (log2 sums of mirrored shapes, 2x640 vs 2x960 and
  // 2x960 vs 2x640, differ in the last bit).
  const TunedEntry* nearest = nullptr;
  double best = 0;
  for (const auto& e : entries_) {
    const auto d = instanceDistance(inst, e.instance);
    if (!d || (*d > kMaxNearestDistance + 1e-9 && !e.instance.sameOpAs(inst)) || !pick(e, "", TunedStep::Nearest)) continue;
    const bool tie = nearest && std::abs(*d - best) <= 1e-9;
    if (!nearest || (!tie && *d < best) || (tie && e.instance.text() < nearest->instance.text()))
      nearest = &e, best = *d;
  }
  if (nearest) {
    std::ostringstream s;
    s << "nearest " << nearest->instance.text() << " (distance " << best << ")";
    return refitForInstance(fam, inst, *pick(*nearest, s.str(), TunedStep::Nearest));
  }
  if (auto c = deviceDefault(inst, variant)) return refitForInstance(fam, inst, *c);
  const VariantDef& v = variant.empty() ? fam.variants().front() : fam.variant(variant);
  return {v.name, genericDefault(fam, v, inst).text(), "generic default"};
}

TunedChoice refitForInstance(const Family& fam, const OpInstance& inst, TunedChoice c) {
  try {
    const VariantDef& v = fam.variant(c.variant);
    if (!v.fitDefaults || inst.family != fam.name()) return c;
    const ParamPoint taken = v.parsePoint(c.params);
    const ParamPoint fitted = v.fitPoint(taken, *inst.problem(fam));
    std::string names;  // the parameters the rule changed
    for (const auto& [name, value] : fitted.values())
      if (taken[name] != value) names += (names.empty() ? "" : ", ") + name;
    if (names.empty()) return c;
    c.params = fitted.text();
    c.source += "; " + names + " sized to this instance";
    c.medianUs = 0;  // not the time of this point
  } catch (const Error&) {
    // A point or instance this family refuses: left as taken (its user reports it).
  }
  return c;
}

ParamPoint genericDefault(const Family& fam, const VariantDef& v, const OpInstance& inst) {
  if (!v.fitDefaults || inst.family != fam.name()) return v.defaults();
  try {
    return v.defaultsFor(*inst.problem(fam));
  } catch (const Error&) {
    return v.defaults();  // attributes this family refuses: lookup's callers report them
  }
}

std::optional<TunedChoice> TuningDatabase::deviceDefault(const OpInstance& inst, const std::string& variant) const {
  // The (variant, params) that wins most of this family's entries in the instance's
  // storage format (parameters tuned for images say little about buffers), else of all
  // its entries of the instance's weight format. Never another weight format's: an
  // f16-weight kernel moves half the weight bytes, so f32-weight winners say little
  // about it (and exact and nearest match whole formats already); never another
  // arithmetic's (other kernels altogether). A tie goes to the
  // smallest (variant, params), std::map's first.
  std::map<std::pair<std::string, std::string>, int> votes;
  for (int pass = 0; pass < 2 && votes.empty(); ++pass)
    for (const auto& e : entries_) {
      if (e.instance.family != inst.family || e.instance.format.weights != inst.format.weights ||
          e.instance.format.arithmetic != inst.format.arithmetic ||
          (pass == 0 && !(e.instance.format == inst.format)))
        continue;
      const std::string v = variant.empty() ? e.best : variant;
      if (auto it = e.variants.find(v); it != e.variants.end()) ++votes[{v, it->second.params}];
    }
  if (votes.empty()) return std::nullopt;
  auto top = std::max_element(votes.begin(), votes.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; });
  return TunedChoice{top->first.first, top->first.second, "device default", 0, TunedStep::DeviceDefault};
}

TunedChooser::TunedChooser(const std::string& dbDir, const DeviceInfo& dev) : TunedChooser(dbDir, dev.key(), dev) {}

TunedChooser::TunedChooser(const std::string& dbDir, const std::string& key, const DeviceCaps& dev) {
  // The file of this key, or the one written under its legacy name (device_key.h).
  ownPath_ = resolveKeyedPath(dbDir, key, ".yaml");
  ownExists_ = std::filesystem::exists(ownPath_);
  own_ = TuningDatabase::loadOrEmpty(ownPath_, key, dev);
  // Vendor default: the other databases of this API and vendor, in file-name order. Keys
  // are compared migrated, so legacy-named files take part and no other API's does.
  const std::string vendor = keyVendorPrefix(key);  // "opencl-nvidia-", "opencl-pocl-"
  std::vector<std::filesystem::path> paths;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dbDir, ec)) {
    const std::string stem = migrateDeviceKey(f.path().stem().string());
    if (f.path().extension() == ".yaml" && stem.rfind(vendor, 0) == 0 && stem != key &&
        f.path().string() != ownPath_)
      paths.push_back(f.path());
  }
  std::sort(paths.begin(), paths.end());
  for (const auto& path : paths) {
    try {
      siblings_.emplace_back(migrateDeviceKey(path.stem().string()),
                             TuningDatabase::load(path.string(), path.stem().string()));
    } catch (const Error&) {
      // Another device's file: a fallback source only, so a malformed one is passed over
      // (its own device reports the error when it is used there).
    }
  }
}

TunedChoice TunedChooser::choose(const Family& fam, const OpInstance& inst, const std::string& variant) const {
  TunedChoice own = own_.lookup(fam, inst, variant);
  if (own.tuned()) return own;
  for (const auto& [key, db] : siblings_) {
    const TunedChoice c = db.lookup(fam, inst, variant);
    if (c.tuned())
      return {c.variant, c.params, "vendor default (" + key + ": " + c.source + ")", c.medianUs, TunedStep::VendorDefault};
  }
  return own;
}

TunedChoice tunedChoice(const std::string& dbDir, const DeviceInfo& dev, const Family& fam, const OpInstance& inst,
                        const std::string& variant) {
  return TunedChooser(dbDir, dev).choose(fam, inst, variant);
}

}  // namespace sdspeed
