#include "pipeline/run/ablation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/lowering.h"
#include "kernels/registry.h"
#include "tuning/check.h"
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
          k != "variants" && k != "release" && k != "scratch" && k != "derived_weights" && k != "budget" &&
          k != "context_ops")
        fail(kv.first, k,
             "unknown key (name, fused, planner, precision, weights, arithmetic, backend, max_abs, variants, release, scratch, "
             "derived_weights, budget, context_ops)");
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
      if (const YAML::Node n = r["context_ops"]) {
        const std::string v = n.as<std::string>();
        if (v != "once" && v != "every-step") fail(n, "context_ops", "want once or every-step");
        cur.reuseContextOps = v == "once";
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

namespace {

// Why the device cannot run variant `v` of `fam` in `format` at all ("" = some point
// can): the arithmetic, the device rules at every parameter point (as `check` and
// `bench` skip a variant), then whether the backend has kernels for it, asked of the
// first of the family's check problems the default point supports (on Vulkan the
// lowering is described, not compiled). Only a lacked capability or missing kernels
// count: a problem-specific refusal says nothing about the model's ops.
std::string variantCannotRun(Backend& be, const Family& fam, const VariantDef& v, StorageFormat format) {
  // A family with no half variant computes in f32 under --arithmetic f16 (graphNodeFormats).
  if (!familyComputesIn(fam, format.arithmetic)) format = format.withArithmetic(DType::F32);
  if (std::find(v.arithmetic.begin(), v.arithmetic.end(), format.arithmetic) == v.arithmetic.end())
    return std::string("computes in ") + dtypeName(v.arithmetic.front()) + " only (the row's arithmetic is " +
           dtypeName(format.arithmetic) + ")";
  const auto space = v.space();
  if (std::none_of(space.begin(), space.end(), [&](const ParamPoint& p) { return v.deviceLimitReason(p, be.caps()).empty(); })) {
    const std::string why = v.deviceLimitReason(v.defaults(), be.caps());
    return why.empty() ? "no parameter point this device can run" : why;
  }
  const ParamPoint d = v.defaults();
  for (const auto& prob : fam.checkProblems(false))
    if (fam.unsupportedReason(v, d, *prob, format, be.caps()).empty())
      return lackedCapability(loweringGap(be, fam, v, d, *prob, format));
  return "";
}

}  // namespace

std::string ablationRowSkip(const AblationRow& row, const AblationRow* previous, Backend& be, const StorageFormat& format) {
  for (const auto& [famName, list] : row.variants) {
    const Family& fam = findFamily(famName);
    const std::vector<std::string>* before = nullptr;
    if (previous)
      if (auto it = previous->variants.find(famName); it != previous->variants.end()) before = &it->second;
    std::string first;  // the first added variant's reason, when none added can run
    bool added = false, runs = false;
    for (const auto& name : list) {
      if (before && std::find(before->begin(), before->end(), name) != before->end()) continue;
      added = true;
      const std::string why = variantCannotRun(be, fam, fam.variant(name), format);
      if (why.empty()) runs = true;
      else if (first.empty())  // "gemm coopmat_f16: device lacks ...", or the lowering's own "conv X has no ..."
        first = why.rfind(famName + " " + name + " ", 0) == 0 ? why : famName + " " + name + ": " + why;
    }
    if (added && !runs) return first;
  }
  return "";
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
