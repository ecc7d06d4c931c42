#include "tuning/shape_set.h"

#include <yaml-cpp/yaml.h>

#include "runtime/opencl/cl_error.h"
#include "tuning/yaml_file.h"

namespace sdspeed {

std::vector<ShapeEntry> loadShapeSet(const std::string& path) {
  const YAML::Node root = loadYamlFile(path, "shape set");
  auto at = [&](const YAML::Node& n, const std::string& key) { return yamlWhere(path, n, key); };
  if (!root.IsMap() || !root["instances"] || !root["instances"].IsSequence())
    throw Error(path + ": not a shape set (want a mapping with an 'instances' list)");
  std::vector<ShapeEntry> out;
  try {
    for (const auto& n : root["instances"]) {
      if (!n.IsMap()) throw Error(at(n, "instances") + ": entry is not a mapping");
      ShapeEntry e;
      for (const char* key : {"op", "shape", "component"})
        if (!n[key] || !n[key].IsScalar()) throw Error(at(n, key) + ": missing or not a scalar");
      e.op = n["op"].as<std::string>();
      e.component = n["component"].as<std::string>();
      try {
        e.shape = parseShape(n["shape"].as<std::string>());
      } catch (const Error& err) {
        throw Error(at(n["shape"], "shape") + ": " + err.what());
      }
      auto integer = [&](const char* key) {
        try {
          return n[key].as<int>();
        } catch (const YAML::Exception&) {
          throw Error(at(n[key], key) + ": not an integer");
        }
      };
      if (n["count"]) {
        e.count = integer("count");
        if (e.count <= 0) throw Error(at(n["count"], "count") + ": must be positive");
      }
      if (n["steady"]) {
        e.steady = integer("steady");
        if (e.steady < 0 || e.steady > e.count)
          throw Error(at(n["steady"], "steady") + ": must be 0.." + std::to_string(e.count) + " (the entry's count)");
      }
      if (const YAML::Node a = n["attrs"]) {
        if (!a.IsMap()) throw Error(at(a, "attrs") + ": not a mapping");
        for (const auto& kv : a) e.attrs[kv.first.as<std::string>()] = kv.second.as<std::string>();
      }
      out.push_back(std::move(e));
    }
  } catch (const YAML::Exception& e) {
    throw Error(path + " line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return out;
}

}  // namespace sdspeed
