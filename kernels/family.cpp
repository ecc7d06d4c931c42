#include "kernels/family.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "runtime/opencl/cl_error.h"

namespace sdspeed {

int ParamPoint::operator[](const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw Error("parameter '" + name + "' is not set in point " + text());
  return it->second;
}

std::string ParamPoint::text() const {
  std::string s;
  for (const auto& [k, v] : values_) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s;
}

const ParamDef* VariantDef::param(const std::string& n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

ParamPoint VariantDef::defaults() const {
  std::map<std::string, int> v;
  for (const auto& p : params) v[p.name] = p.values.front();
  return ParamPoint(v);
}

ParamPoint VariantDef::fitPoint(const ParamPoint& base, const Problem& prob) const {
  if (!fitDefaults) return base;
  std::map<std::string, int> v = base.values();
  for (const auto& [name, value] : fitDefaults(base, prob)) {
    const ParamDef* def = param(name);
    if (!def || std::find(def->values.begin(), def->values.end(), value) == def->values.end()) return base;
    v[name] = value;
  }
  ParamPoint fitted(v);
  return violatedConstraint(fitted).empty() ? fitted : base;
}

std::vector<ParamPoint> VariantDef::space() const {
  std::vector<ParamPoint> out;
  std::map<std::string, int> cur;
  std::function<void(size_t)> walk = [&](size_t i) {
    if (i == params.size()) {
      ParamPoint p(cur);
      if (violatedConstraint(p).empty()) out.push_back(p);
      return;
    }
    for (int v : params[i].values) {
      cur[params[i].name] = v;
      walk(i + 1);
    }
  };
  walk(0);
  return out;
}

ParamPoint VariantDef::parsePoint(const std::string& text) const {
  std::map<std::string, int> v = defaults().values();
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos)
      throw Error("bad parameter '" + item + "' for variant " + name + " (want NAME=VALUE)");
    std::string key = item.substr(0, eq);
    const ParamDef* def = param(key);
    if (!def) {
      std::string known;
      for (const auto& p : params) known += (known.empty() ? "" : ", ") + p.name;
      throw Error("unknown parameter '" + key + "' for variant " + name + " (known: " + known + ")");
    }
    int value = 0;
    try {
      size_t used = 0;
      value = std::stoi(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw Error("bad value in '" + item + "' for variant " + name);
    }
    bool listed = false;
    for (int x : def->values) listed |= x == value;
    if (!listed) {
      std::string vals;
      for (int x : def->values) vals += (vals.empty() ? "" : ", ") + std::to_string(x);
      throw Error("value " + std::to_string(value) + " of " + key + " is not one of {" + vals +
                  "} for variant " + name);
    }
    v[key] = value;
  }
  ParamPoint p(v);
  if (std::string bad = violatedConstraint(p); !bad.empty())
    throw Error("impossible parameters " + p.text() + " for variant " + name + ": violates " + bad);
  return p;
}

std::string VariantDef::violatedConstraint(const ParamPoint& p) const {
  for (const auto& c : constraints)
    if (!c.holds(p)) return c.description;
  return {};
}

std::string VariantDef::deviceLimitReason(const ParamPoint& p, const DeviceCaps& dev) const {
  for (const auto& ext : requiredExtensions) {
    // OpenCL 3.0 reports sub-groups as a device query, not always as the extension.
    const bool has = dev.hasExtension(ext) || (ext == "cl_khr_subgroups" && dev.subgroups);
    // A half variant asks for cl_khr_fp16; on another API the same capability is
    // DeviceCaps::fp16 (Vulkan: shaderFloat16, enabled at device creation).
    if (ext == "cl_khr_fp16" && dev.api != "opencl") {
      if (!dev.fp16) return "device lacks f16 arithmetic (shaderFloat16)";
      continue;
    }
    if (!has) return "device lacks " + ext;
  }
  if (workGroupSize) {
    size_t wg = workGroupSize(p);
    if (wg > dev.maxWorkGroupSize)
      return "work-group of " + std::to_string(wg) + " exceeds the device maximum " +
             std::to_string(dev.maxWorkGroupSize);
  }
  if (localMemBytes) {
    size_t lm = localMemBytes(p);
    if (lm > dev.localMemBytes)
      return std::to_string(lm) + " bytes of local memory exceed the device's " +
             std::to_string(dev.localMemBytes);
  }
  if (deviceRule) return deviceRule(p, dev);
  return {};
}

std::string Family::unsupportedReason(const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f, const DeviceCaps& dev) const {
  if (std::find(v.arithmetic.begin(), v.arithmetic.end(), f.arithmetic) == v.arithmetic.end()) {
    // "computes in f32 only" for the f32 variants, "computes in f16 only" for their half twins.
    std::string has;
    for (DType a : v.arithmetic) has += (has.empty() ? "" : ", ") + std::string(dtypeName(a));
    return "computes in " + has + " only: no " + dtypeName(f.arithmetic) + "-arithmetic kernel for this variant";
  }
  if (f.arithmetic == DType::F16 && !dev.fp16) return "device lacks cl_khr_fp16";
  if (std::string bad = v.violatedConstraint(p); !bad.empty()) return "violates " + bad;
  if (std::string why = v.deviceLimitReason(p, dev); !why.empty()) return why;
  const auto sl = slots();
  const auto sh = shapes(prob);
  for (size_t i = 0; i < sl.size(); ++i) {
    TensorDesc d{sh[i], slotFormat(sl[i], f)};
    if (std::string why = d.unsupportedReason(dev); !why.empty()) return sl[i].name + ": " + why;
  }
  return {};
}

size_t Family::minBytes(const Problem& prob, const StorageFormat& f) const {
  const auto sl = slots();
  const auto sh = shapes(prob);
  size_t total = 0;
  for (size_t i = 0; i < sl.size(); ++i) {
    TensorDesc d{sh[i], slotFormat(sl[i], f)};
    total += static_cast<size_t>(d.shape.elements()) * d.elementBytes();
  }
  return total;
}

double Family::minFlops(const Problem&) const { return 0.0; }

bool Family::readsWeights() const {
  for (const auto& s : slots())
    if (s.weight()) return true;
  return false;
}

bool Family::readsQuantizedWeights() const {
  for (const auto& s : slots())
    if (s.quantizable) return true;
  return false;
}

std::string Family::keyFormatNote(const StorageFormat& f) const {
  const StorageFormat k = keyFormat(f);
  if (k == f) return {};
  if (!readsWeights())
    return name() + ": reads no weights, " + dtypeName(f.weights) + " weights run as f32 weights (same program)";
  return name() + ": no " + dtypeName(f.weights) + " kernel path, its weights stay f16 (" + k.name() + ")";
}

const VariantDef& Family::variant(const std::string& n) const {
  for (const auto& v : variants())
    if (v.name == n) return v;
  std::string known;
  for (const auto& v : variants()) known += (known.empty() ? "" : ", ") + v.name;
  throw Error("unknown variant '" + n + "' of " + name() + " (known: " + known + ")");
}

std::string Family::sourceText(const Context& ctx) const { return ctx.sources().get(sourcePath()); }

std::string Family::programSource(const Context& ctx, const VariantDef& v, const ParamPoint& p,
                                  const StorageFormat& format, int vec) const {
  const StorageFormat f = keyFormat(format);
  std::ostringstream s;
  s << "// sdspeed program: family " << name() << ", params " << p.text() << ", storage "
    << f.name() << "\n";
  s << ctx.sources().get("common/prelude.cl") << "\n";
  for (const auto& [k, x] : v.defines) s << "#define " << k << " " << x << "\n";
  for (const auto& [k, x] : p.values()) s << "#define " << k << " " << x << "\n";
  for (const auto& slot : slots()) s << tensorAccessors(slot.name, slotFormat(slot, f), slot.access, vec);
  s << "\n" << sourceText(ctx);
  return s.str();
}

ClBuiltProgram Family::buildProgram(Context& ctx, const VariantDef& v, const ParamPoint& p,
                               const StorageFormat& f, int vec) const {
  std::string label = name() + "." + v.name + " [" + p.text() + "] " + keyFormat(f).name();
  ClBuiltProgram prog;
  prog.source = programSource(ctx, v, p, f, vec);
  prog.handle = ctx.programs().get(label, prog.source, kBuildOptions);
  return prog;
}

void Family::prebuild(Context& ctx, const VariantDef& v, const ParamPoint& p, const StorageFormat& f) const {
  buildProgram(ctx, v, p, f, p.values().count("VEC") ? p["VEC"] : 1);
}

SingleKernelOp::SingleKernelOp(Context& ctx, std::vector<TensorSlot> slots, const ClBuiltProgram& program,
                               const std::string& kernelName, Launch launch, ScalarArgs scalars)
    : slots_(std::move(slots)), kernel_(ctx, program, kernelName), launch_(launch), scalars_(std::move(scalars)) {}

OpEvents SingleKernelOp::enqueue(const std::vector<DeviceTensor*>& tensors) {
  KernelArgs args;
  args.slotTensors(slots_, tensors);
  if (scalars_) scalars_(args);
  OpEvents events;
  events.push_back(kernel_.run(args, launch_));
  return events;
}

size_t roundUp(size_t x, size_t m) { return (x + m - 1) / m * m; }

void OpScratch::setSizes(std::vector<uint64_t> bytes) {
  sizes_ = std::move(bytes);
  bound_.clear();
  own_.clear();
}

uint64_t OpScratch::total() const {
  uint64_t t = 0;
  for (uint64_t b : sizes_) t += b;
  return t;
}

void OpScratch::bind(const std::vector<BufferRegion>& regions) {
  if (regions.size() != sizes_.size())
    throw Error("an op with " + std::to_string(sizes_.size()) + " scratch regions was given " +
                std::to_string(regions.size()));
  for (const auto& r : regions)
    if (!r.mem) throw Error("a scratch region without memory");
  bound_ = regions;
  own_.clear();
}

BufferRegion OpScratch::at(Context& ctx, size_t index) {
  if (index >= sizes_.size()) throw Error("scratch region " + std::to_string(index) + " was not declared");
  if (!bound_.empty()) return bound_[index];
  if (own_.size() != sizes_.size()) {
    own_.clear();
    for (uint64_t b : sizes_) own_.push_back(ctx.createBuffer(std::max<uint64_t>(b, 4)));
  }
  return {own_[index].get(), 0};
}

size_t PreparedOp::scratchBytes() const {
  size_t t = 0;
  for (uint64_t b : scratchRegions()) t += b;
  return t;
}

bool familyComputesIn(const Family& fam, DType arithmetic) {
  for (const auto& v : fam.variants())
    if (std::find(v.arithmetic.begin(), v.arithmetic.end(), arithmetic) != v.arithmetic.end()) return true;
  return false;
}

std::vector<const VariantDef*> defaultOrder(const Family& fam) {
  std::vector<const VariantDef*> out;
  for (const auto& v : fam.variants()) out.push_back(&v);
  std::stable_sort(out.begin(), out.end(), [](const VariantDef* a, const VariantDef* b) {
    return a->defaultRank > b->defaultRank;
  });
  return out;
}

}  // namespace sdspeed
