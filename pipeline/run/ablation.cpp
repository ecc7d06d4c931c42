#include "pipeline/run/ablation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/registry.h"
#include "pipeline/exec/graph_executor.h"
#include "runtime/opencl/cl_error.h"
#include "runtime/memory_planner.h"
#include "tuning/yaml_file.h"

namespace sdspeed {

AblationPlan loadAblationPlanUnchecked(const std::string& path);

AblationPlan loadAblationPlan(const std::string& path) {
  try {
    return loadAblationPlanUnchecked(path);
  } catch (const YAML::Exception& e) {
    throw Error(path + " line " + std::to_string(e.mark.line + 1) + ": malformed ablation config: " + e.msg);
  }
}

AblationPlan loadAblationPlanUnchecked(const std::string& path) {
  const YAML::Node root = loadYamlFile(path, "ablation config");
  AblationPlan plan;
  plan.path = path;
  auto fail = [&](const YAML::Node& n, const std::string& key, const std::string& what) -> void {
    throw Error(yamlWhere(path, n, key) + ": " + what);
  };
  if (!root.IsMap()) fail(root, "", "an ablation config is a map with format, name and rows");
  if (!root["format"] || root["format"].as<std::string>() != "1") fail(root, "format", "want format: 1");
  plan.name = root["name"] ? root["name"].as<std::string>() : path;
  const YAML::Node rows = root["rows"];
  if (!rows || !rows.IsSequence() || rows.size() == 0) fail(root, "rows", "want a non-empty list of rows");
  AblationRow cur;
  for (const auto& r : rows) {
    if (!r.IsMap()) fail(r, "", "a row is a map");
    for (const auto& kv : r) {
      const std::string k = kv.first.as<std::string>();
      if (k != "name" && k != "fused" && k != "planner" && k != "precision" && k != "weights" && k != "arithmetic" && k != "backend" && k != "max_abs" &&
          k != "variants" && k != "release" && k != "scratch" && k != "derived_weights" && k != "budget")
        fail(kv.first, k,
             "unknown key (name, fused, planner, precision, weights, arithmetic, backend, max_abs, variants, release, scratch, "
             "derived_weights, budget)");
    }
    if (!r["name"]) fail(r, "name", "every row needs a name");
    try {
      cur.name = r["name"].as<std::string>();
      if (r["fused"]) cur.fused = r["fused"].as<bool>();
      if (r["planner"]) {
        cur.planner = r["planner"].as<std::string>();
        if (cur.planner != "none") parsePlanStrategy(cur.planner);
      }
      if (r["precision"]) {
        cur.precision = r["precision"].as<std::string>();
        if (cur.precision != "f32" && cur.precision != "f16") fail(r["precision"], "precision", "want f32 or f16");
      }
      if (r["weights"]) {
        cur.weights = r["weights"].as<std::string>();
        ExecOptions probe;
        try {
          parseWeightsSpec(cur.weights, "weights", probe);
        } catch (const Error& e) {
          fail(r["weights"], "weights", e.what());
        }
      }
      if (r["arithmetic"]) {
        cur.arithmetic = r["arithmetic"].as<std::string>();
        if (cur.arithmetic != "f32" && cur.arithmetic != "f16") fail(r["arithmetic"], "arithmetic", "want f32 or f16");
      }
      if (r["backend"]) {
        cur.backend = r["backend"].as<std::string>();
        if (cur.backend != "opencl" && cur.backend != "vulkan") fail(r["backend"], "backend", "want opencl or vulkan");
      }
      if (r["max_abs"]) cur.maxAbs = r["max_abs"].as<double>();
      if (const YAML::Node rel = r["release"]) {
        bool v = false;
        if (!rel.IsScalar() || !YAML::convert<bool>::decode(rel, v)) fail(rel, "release", "want true or false");
        cur.release = v;
      }
      if (const YAML::Node n = r["scratch"]) {
        const std::string v = n.as<std::string>();
        if (v != "planned" && v != "own") fail(n, "scratch", "want planned or own");
        cur.planScratch = v == "planned";
      }
      if (const YAML::Node n = r["derived_weights"]) {
        const std::string v = n.as<std::string>();
        if (v != "resident" && v != "per-call") fail(n, "derived_weights", "want resident or per-call");
        cur.derivedPerCall = v == "per-call";
      }
      if (const YAML::Node n = r["budget"]) {
        const std::string v = n.as<std::string>();
        if (v == "none") {
          cur.budget = 0;
        } else {
          try {
            cur.budget = parseMemorySize("budget", v);
          } catch (const Error& e) {
            fail(n, "budget", e.what());
          }
        }
      }
      if (const YAML::Node v = r["variants"]) {
        if (!v.IsMap()) fail(v, "variants", "want FAMILY: [VARIANT, ...]");
        for (const auto& kv : v) {
          const std::string fam = kv.first.as<std::string>();
          std::vector<std::string> list;
          for (const auto& x : kv.second) list.push_back(x.as<std::string>());
          if (list.empty()) fail(kv.first, fam, "an empty variant list");
          for (const auto& name : list) findFamily(fam).variant(name);
          cur.variants[fam] = list;
        }
      }
    } catch (const YAML::Exception& e) {
      fail(r, cur.name, std::string("malformed row: ") + e.what());
    } catch (const Error& e) {
      if (std::string(e.what()).rfind(path, 0) == 0) throw;
      fail(r, cur.name, e.what());
    }
    plan.rows.push_back(cur);
  }
  return plan;
}

double psnrDb(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) throw Error("psnr: images of different sizes");
  double se = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    auto px = [](float v) { return std::clamp(static_cast<double>(v) / 2 + 0.5, 0.0, 1.0); };
    const double d = px(a[i]) - px(b[i]);
    se += d * d;
  }
  if (se == 0) return std::numeric_limits<double>::infinity();
  return 10 * std::log10(1.0 / (se / static_cast<double>(a.size())));
}

}  // namespace sdspeed
