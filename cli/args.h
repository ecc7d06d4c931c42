// Command-line parsing for the sdspeed verbs: --name VALUE options and --flag
// switches, each verb declaring which it accepts; anything else is an Error.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace sdspeed {

class Args {
 public:
  // argv after the verb. options: names taking a value; flags: names without.
  Args(const std::vector<std::string>& argv, const std::set<std::string>& options,
       const std::set<std::string>& flags);
  bool has(const std::string& name) const;
  std::string get(const std::string& name, const std::string& fallback = "") const;
  int getInt(const std::string& name, int fallback) const;
  // Comma-separated list, empty if absent; a repeated option contributes every value.
  std::vector<std::string> list(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;                 // the last value given
  std::map<std::string, std::vector<std::string>> all_;        // every value, in order (list())
  std::set<std::string> flags_;
};

}  // namespace sdspeed
