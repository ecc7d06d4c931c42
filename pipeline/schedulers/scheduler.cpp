#include "pipeline/schedulers/scheduler.h"

#include "pipeline/schedulers/config.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace sdspeed {

namespace sched {
std::unique_ptr<Scheduler> makeDdim(const ConfigReader& cfg);
std::unique_ptr<Scheduler> makePndm(const ConfigReader& cfg);
std::unique_ptr<Scheduler> makeEuler(const ConfigReader& cfg);
std::unique_ptr<Scheduler> makeDpmpp2m(const ConfigReader& cfg);
}  // namespace sched

void Scheduler::scaleModelInput(std::span<float>, float) {}

const std::vector<std::string>& schedulerNames() {
  static const std::vector<std::string> names = {"ddim", "pndm", "euler", "dpmpp2m"};
  return names;
}

std::unique_ptr<Scheduler> makeScheduler(std::string_view name, const std::string& configJson,
                                         const std::string& label) {
  std::string n(name);
  if (n == "ddim") return sched::makeDdim(sched::ConfigReader(configJson, label, n));
  if (n == "pndm") return sched::makePndm(sched::ConfigReader(configJson, label, n));
  if (n == "euler") return sched::makeEuler(sched::ConfigReader(configJson, label, n));
  if (n == "dpmpp2m") return sched::makeDpmpp2m(sched::ConfigReader(configJson, label, n));
  std::string known;
  for (const auto& s : schedulerNames()) known += (known.empty() ? "" : "|") + s;
  throw Error("unknown scheduler '" + n + "' (known: " + known + ")");
}

std::unique_ptr<Scheduler> loadScheduler(std::string_view name, const std::string& configPath) {
  std::string text;
  if (!readFile(configPath, text)) throw Error("cannot read scheduler config '" + configPath + "'");
  return makeScheduler(name, text, "scheduler config '" + configPath + "'");
}

}  // namespace sdspeed
