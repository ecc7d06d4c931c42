// Reading the YAML files sdspeed is given (tuning databases, shape sets): every error
// names the file, the line and, where there is one, the key.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace sdspeed {

// Throws Error "cannot read WHAT PATH" or "PATH line N: malformed YAML: ...".
YAML::Node loadYamlFile(const std::string& path, const std::string& what);
// "PATH line N, key 'KEY'" for node n.
std::string yamlWhere(const std::string& path, const YAML::Node& n, const std::string& key);

}  // namespace sdspeed
