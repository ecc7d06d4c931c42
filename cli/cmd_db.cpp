// sdspeed db: joining and comparing tuning databases and sweep caches made by shards
// (tune --shard K/N), by several GPUs (tune --device gpus) or by several hosts
// (scripts/cluster/). The rules live in tuning/db_merge.h.
#include <iostream>

#include "cli/commands.h"
#include "runtime/error.h"
#include "runtime/atomic_file.h"
#include "tuning/db_merge.h"

namespace sdspeed {
namespace {

const char* kUsage =
    "usage: sdspeed db merge IN.yaml... -o OUT.yaml\n"
    "       sdspeed db merge --sweeps (IN.csv|SWEEP_DIR)... -o OUT_DIR\n"
    "       sdspeed db compare A.yaml B.yaml | A.csv B.csv | --sweeps A_DIR B_DIR\n"
    "merge: databases -> every variant's fastest point per instance, entries sorted by instance;\n"
    "  inputs must share the device key, the driver and each family's kernel source hash.\n"
    "  --sweeps: the union of the caches' rows per <device-key>/<op> (a file's folder and its\n"
    "  name up to the first dot: gemm.shard-2-of-4.csv joins gemm.csv), written to\n"
    "  OUT_DIR/<device-key>/<op>.csv sorted; OUT_DIR may be an input.\n"
    "compare: exit 0 when two runs measured the same points (databases: the same instances and\n"
    "  variants; caches: the same instance, variant, params and status rows), else 1 and one\n"
    "  line per difference. Times are not compared.\n";

struct DbArgs {
  std::vector<std::string> inputs;
  std::string out;
  bool sweeps = false, help = false;
};

DbArgs parse(const std::vector<std::string>& argv) {
  DbArgs a;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    if (s == "-o" || s == "--out") {
      if (i + 1 >= argv.size()) throw Error("option " + s + " needs a value");
      a.out = argv[++i];
    } else if (s == "--sweeps") {
      a.sweeps = true;
    } else if (s == "--help" || s == "-h") {
      a.help = true;
    } else if (s.rfind("-", 0) == 0) {
      throw Error("unknown option " + s);
    } else {
      a.inputs.push_back(s);
    }
  }
  return a;
}

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

int merge(const DbArgs& a) {
  if (a.out.empty()) throw Error("db merge needs -o OUT");
  if (a.inputs.empty()) throw Error("db merge needs input files");
  if (a.sweeps) {
    const auto groups = mergeSweeps(a.inputs);
    size_t rows = 0;
    for (const auto& [g, r] : groups) rows += r.size();
    for (const auto& path : writeMergedSweeps(groups, a.out)) std::cout << "wrote " << path << "\n";
    std::cout << "merged " << rows << " rows from " << a.inputs.size() << " inputs into " << groups.size()
              << " sweep caches\n";
    return 0;
  }
  for (const auto& in : a.inputs)
    if (!endsWith(in, ".yaml")) throw Error("db merge: " + in + " is not a .yaml database (sweep caches need --sweeps)");
  checkWritable(a.out, "-o");
  const TuningDatabase db = mergeDatabases(a.inputs);
  db.save(a.out);
  std::cout << "merged " << a.inputs.size() << " databases of " << db.deviceKey << ": " << db.entries().size()
            << " instances -> " << a.out << "\n";
  return 0;
}

int compare(const DbArgs& a) {
  if (a.inputs.size() != 2) throw Error("db compare needs exactly two inputs");
  std::vector<std::string> diff;
  const auto& [x, y] = std::pair(a.inputs[0], a.inputs[1]);
  if (a.sweeps || (endsWith(x, ".csv") && endsWith(y, ".csv"))) {
    const auto gx = mergeSweeps({x}), gy = mergeSweeps({y});
    // Single files of one op on two devices compare by content; folders by group.
    if (!a.sweeps && gx.size() == 1 && gy.size() == 1) {
      diff = compareSweepRows(gx.begin()->second, gy.begin()->second);
    } else {
      for (const auto& [g, rows] : gx) {
        auto it = gy.find(g);
        if (it == gy.end()) diff.push_back("only in the first: sweep cache " + g);
        else
          for (const auto& d : compareSweepRows(rows, it->second)) diff.push_back(g + ": " + d);
      }
      for (const auto& [g, rows] : gy)
        if (!gx.count(g)) diff.push_back("only in the second: sweep cache " + g);
    }
  } else if (endsWith(x, ".yaml") && endsWith(y, ".yaml")) {
    diff = compareDatabases(TuningDatabase::load(x), TuningDatabase::load(y));
  } else {
    throw Error("db compare wants two .yaml databases, two .csv sweep caches or --sweeps DIR DIR");
  }
  for (const auto& d : diff) std::cout << d << "\n";
  std::cout << (diff.empty() ? "same points" : std::to_string(diff.size()) + " differences") << ": " << x << " vs "
            << y << "\n";
  return diff.empty() ? 0 : 1;
}

}  // namespace

int cmdDb(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0] == "--help" || argv[0] == "-h") {
    std::cout << kUsage;
    return argv.empty() ? 2 : 0;
  }
  const std::string sub = argv[0];
  const DbArgs a = parse({argv.begin() + 1, argv.end()});
  if (a.help) {
    std::cout << kUsage;
    return 0;
  }
  if (sub == "merge") return merge(a);
  if (sub == "compare") return compare(a);
  throw Error("unknown db command '" + sub + "' (known: merge, compare)");
}

}  // namespace sdspeed
