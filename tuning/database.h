// The per-device tuning database, configs/tuned/<device-key>.yaml (format in
// configs/tuned/FORMAT.md): for each op instance the best parameters of every
// variant and the best variant overall. lookup() answers "which variant and
// parameters for this op instance on this device" with fallbacks:
//   exact instance -> nearest instance of the same family and storage format whose
//   structural attributes are equal, by shape and size attributes (GEMM n, conv cout;
//   tuning/nearest.h instanceDistance, at most kMaxNearestDistance unless all
//   attributes are identical) -> device default (the variant and
//   parameters that win most of this family's entries here) -> vendor default (the
//   same chain, short of the generic default, in the databases of the other devices
//   of this vendor: files in the same folder whose key starts with the vendor word,
//   e.g. nvidia-h100-575 for nvidia-h200-580, pocl-cpu-5 for pocl-cpu-3; the first
//   in file-name order that answers) -> generic default (the family's first variant
//   at its declared defaults).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/opencl/device.h"
#include "tuning/op_instance.h"

namespace sdspeed {

struct TunedVariant {
  std::string params;  // ParamPoint::text()
  double medianUs = 0, minUs = 0;
};

struct TunedEntry {
  OpInstance instance;
  std::string best;  // variant
  std::map<std::string, TunedVariant> variants;
  // The kernel source hash this entry was tuned against where it is not its family's
  // (TuningDatabase::sourceHashes): stamped by setFamilyHash on the entries a tune left
  // behind; "" = the family's. The file's optional per-entry `source_hash`.
  std::string sourceHash;
};

// Which step of the chain answered (the source text says it for people; code asks this).
enum class TunedStep { Exact, Nearest, DeviceDefault, VendorDefault, GenericDefault };

struct TunedChoice {
  std::string variant;
  std::string params;
  // "exact", "nearest <instance> (distance d)", "device default",
  // "vendor default (<key>: <its source>)", "generic default"
  std::string source;
  double medianUs = 0;  // the stored time of that variant (exact or nearest entries), else 0
  TunedStep step = TunedStep::GenericDefault;
  bool tuned() const { return step != TunedStep::GenericDefault; }  // some database answered
};

// A variant's declared defaults fitted to the instance's problem (VariantDef::fitDefaults:
// conv coopmat_f16's split-K); the declared defaults when the instance makes no problem.
ParamPoint genericDefault(const Family& fam, const VariantDef& v, const OpInstance& inst);

// A choice taken from another instance (nearest, device default, and so a vendor default)
// with its problem-sized parameters (VariantDef::fitDefaults: conv coopmat_f16's SK) sized
// again for inst at the taken point's tiles, the source saying so: an SK tuned where 40
// tiles needed 16 splits says nothing about a shape of 640 tiles. Exact entries are
// never refitted.
TunedChoice refitForInstance(const Family& fam, const OpInstance& inst, TunedChoice c);

class TuningDatabase {
 public:
  std::string deviceKey, deviceName, driver;
  // Family -> the kernel source hash (familySourceHash) its entries were last tuned
  // with; optional in the file (`source_hashes:`), empty for databases written before
  // it was recorded. `sdspeed db merge` refuses inputs that disagree on a family.
  std::map<std::string, std::string> sourceHashes;

  // Throws Error naming the file, line and key of anything malformed or wrong: an
  // unknown or non-canonical instance, a duplicate instance, an unknown variant, a
  // parameter unknown or outside its list, a time not finite and > 0 or a minimum
  // above its median, `best` naming no listed variant, and (expectedKey not empty) a
  // device key other than expectedKey, the file's name (configs/tuned/KEY.yaml).
  static TuningDatabase load(const std::string& path, const std::string& expectedKey = "");
  // Missing file: an empty database for that device. Present: load(path, dev.key()).
  static TuningDatabase loadOrEmpty(const std::string& path, const DeviceInfo& dev) {
    return loadOrEmpty(path, dev.key(), dev);
  }
  // The same for any backend's device: its key (Backend::deviceKey) and capabilities.
  static TuningDatabase loadOrEmpty(const std::string& path, const std::string& key, const DeviceCaps& dev);
  void save(const std::string& path) const;  // atomic (temp file + rename)

  // A tune of `family` against kernel sources hashing to `hash`: where the family's
  // recorded hash was another, every entry of it not already stamped keeps that older
  // hash as its own (so a tune cut short, or of one shape, leaves its other entries
  // visibly stale); then the family's hash becomes `hash`, and entries stamped with it
  // are the family's again.
  void setFamilyHash(const std::string& family, const std::string& hash);
  static constexpr const char* kUnrecordedHash = "unrecorded";
  // Stamps one entry's hash ("" or the family's: the family's again).
  void setEntryHash(const OpInstance& inst, const std::string& hash);
  // The source hash an entry was tuned against: its own, else its family's ("" when the
  // file records none).
  std::string entryHash(const TunedEntry& e) const;
  // Removes an instance's entry (tune rebuilds it from the sweep cache).
  void erase(const OpInstance& inst);
  // Keeps the faster of the stored and the new time for that variant, and the best variant.
  void record(const OpInstance& inst, const std::string& variant, const std::string& params, double medianUs,
              double minUs);
  const std::vector<TunedEntry>& entries() const { return entries_; }
  // variant: "" = the best variant; else that variant's own best.
  TunedChoice lookup(const Family& fam, const OpInstance& inst, const std::string& variant = "") const;
  // lookup's third step alone (the device vote), nullopt when no entry votes; public so
  // the leave-one-out replay (tests/test_nearest.cpp) can compare it with the nearest step.
  std::optional<TunedChoice> deviceDefault(const OpInstance& inst, const std::string& variant = "") const;

 private:
  std::vector<TunedEntry> entries_;
};

// The runtime's question: which variant and parameters for this op instance on this
// device, from DB_DIR/<device-key>.yaml, then the vendor's other databases in DB_DIR
// (the generic default when none answers).
// The same chain with the databases loaded once (the pipeline asks for hundreds of
// op instances per run).
class TunedChooser {
 public:
  TunedChooser(const std::string& dbDir, const DeviceInfo& dev);
  // Any backend's device: its key (Backend::deviceKey) and capabilities.
  TunedChooser(const std::string& dbDir, const std::string& key, const DeviceCaps& dev);
  TunedChoice choose(const Family& fam, const OpInstance& inst, const std::string& variant = "") const;
  const std::string& ownPath() const { return ownPath_; }
  bool ownExists() const { return ownExists_; }

 private:
  std::string ownPath_;
  bool ownExists_ = false;
  TuningDatabase own_;
  std::vector<std::pair<std::string, TuningDatabase>> siblings_;  // (key, database), file-name order
};

TunedChoice tunedChoice(const std::string& dbDir, const DeviceInfo& dev, const Family& fam, const OpInstance& inst,
                        const std::string& variant = "");

}  // namespace sdspeed
