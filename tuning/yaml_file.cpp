#include "tuning/yaml_file.h"

#include "runtime/opencl/cl_error.h"

namespace sdspeed {

YAML::Node loadYamlFile(const std::string& path, const std::string& what) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw Error("cannot read " + what + " " + path);
  } catch (const YAML::ParserException& e) {
    throw Error(path + " line " + std::to_string(e.mark.line + 1) + ": malformed YAML: " + e.msg);
  }
}

std::string yamlWhere(const std::string& path, const YAML::Node& n, const std::string& key) {
  return path + " line " + std::to_string(n.Mark().line + 1) + ", key '" + key + "'";
}

}  // namespace sdspeed
