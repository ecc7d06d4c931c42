#include "cli/args.h"

#include <sstream>

#include "runtime/opencl/cl_error.h"

namespace sdspeed {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& options,
           const std::set<std::string>& flags) {
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      // A value after a flag (`--keep-resident yes`) names the flag, not just the value.
      const std::string prev = i ? argv[i - 1].substr(0, argv[i - 1].find('=')) : "";
      if (prev.rfind("--", 0) == 0 && flags.count(prev.substr(2)))
        throw Error("unexpected argument '" + a + "': option " + prev + " takes no value");
      throw Error("unexpected argument '" + a + "'");
    }
    std::string name = a.substr(2), value;
    bool inlineValue = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inlineValue = true;
    }
    if (flags.count(name)) {
      if (inlineValue) throw Error("option --" + name + " takes no value");
      flags_.insert(name);
    } else if (options.count(name)) {
      if (!inlineValue) {
        if (i + 1 >= argv.size()) throw Error("option --" + name + " needs a value");
        value = argv[++i];
      }
      // A repeated option: the last value is the option's value (scripts append their
      // overrides), and a list option gets every value (`--variant conv=x --variant
      // attention=y` is `--variant conv=x,attention=y`, not just the last).
      values_[name] = value;
      all_[name].push_back(value);
    } else {
      throw Error("unknown option --" + name);
    }
  }
}

bool Args::has(const std::string& name) const { return flags_.count(name) || values_.count(name); }

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int Args::getInt(const std::string& name, int fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  try {
    size_t used = 0;
    int v = std::stoi(it->second, &used);
    if (used == it->second.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error("option --" + name + " wants an integer, got '" + it->second + "'");
}

std::vector<std::string> Args::list(const std::string& name) const {
  std::vector<std::string> out;
  auto it = all_.find(name);
  if (it == all_.end()) return out;
  for (const auto& value : it->second) {
    std::stringstream ss(value);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace sdspeed
