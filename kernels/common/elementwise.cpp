#include "kernels/common/elementwise.h"

#include <charconv>
#include <cstdlib>
#include <cstdio>

#include "runtime/opencl/cl_error.h"

namespace sdspeed {

std::string ShapeAttrProblem::text() const {
  std::string s = family + " " + dims.text();
  for (const auto& [k, v] : attrs) s += " " + k + "=" + v;
  return s;
}

const ShapeAttrProblem& asShapeAttr(const Problem& p, const std::string& family) {
  auto* a = dynamic_cast<const ShapeAttrProblem*>(&p);
  if (!a || a->family != family) throw Error(family + " given a problem of another family: " + p.text());
  return *a;
}

AttrReader::AttrReader(std::string family, const std::map<std::string, std::string>& attrs,
                       std::initializer_list<const char*> known)
    : family_(std::move(family)), attrs_(attrs) {
  std::set<std::string> names(known.begin(), known.end());
  for (const auto& [k, v] : attrs) {
    if (names.count(k)) continue;
    std::string list;
    for (const char* n : known) list += (list.empty() ? "" : ", ") + std::string(n);
    throw Error("unknown " + family_ + " attribute '" + k + "' (known: " + (list.empty() ? "none" : list) + ")");
  }
}

int64_t AttrReader::getInt(const std::string& name, int64_t def, int64_t lo, int64_t hi) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return def;
  int64_t v = 0;
  const char* b = it->second.data();
  const char* e = b + it->second.size();
  auto [ptr, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || ptr != e || v < lo || v > hi)
    throw Error("bad " + family_ + " attribute " + name + "=" + it->second + " (want an integer in [" +
                std::to_string(lo) + ", " + std::to_string(hi) + "])");
  return v;
}

double AttrReader::getDouble(const std::string& name, double def, double lo, double hi) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return def;
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != it->second.size() || !(v >= lo && v <= hi))
    throw Error("bad " + family_ + " attribute " + name + "=" + it->second + " (want a number in [" +
                attrText(lo) + ", " + attrText(hi) + "])");
  return v;
}

std::string AttrReader::getChoice(const std::string& name, const std::string& def,
                                  std::initializer_list<const char*> choices) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return def;
  std::string list;
  for (const char* c : choices) {
    if (it->second == c) return it->second;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  throw Error("bad " + family_ + " attribute " + name + "=" + it->second + " (known: " + list + ")");
}

std::string attrText(double v) {
  char buf[32];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    // strtod, not stod: a subnormal or huge value reads back without throwing ERANGE.
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

Launch sliceLaunch(const Shape& out, size_t wg, size_t items) {
  const size_t perRow = (static_cast<size_t>(out.hw()) + items - 1) / items;
  return Launch::cover(3, {perRow, static_cast<size_t>(out.slices()), static_cast<size_t>(out.n)}, {wg, 1, 1});
}

VariantDef slicesVariant(const std::string& summary) {
  VariantDef v;
  v.name = "slices";
  v.summary = summary;
  // Small on purpose: these ops are memory-bound copies; the work-group size and the
  // positions per work-item are what matters, and every point is a program to build.
  v.params = {{"WG", {128, 64}, "work-group size"}, {"ITEMS", {1, 4}, "positions per work-item"}};
  v.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]); };
  return v;
}

std::vector<HostTensor> ElementwiseFamily::makeInputs(const Problem& p, std::mt19937_64& rng) const {
  const auto sl = slots();
  const auto sh = shapes(p);
  std::vector<HostTensor> in;
  for (size_t i = 0; i < sl.size(); ++i)
    in.push_back({sh[i], sl[i].access == Access::Read ? randomNonZero(rng, static_cast<size_t>(sh[i].elements()))
                                                      : std::vector<float>{}});
  return in;
}

ProblemPtr ElementwiseFamily::make(const Shape& s, std::map<std::string, std::string> attrs) const {
  if (s.n < 1 || s.c < 1 || s.h < 1 || s.w < 1) throw Error(name_ + ": empty shape " + s.text());
  auto p = std::make_shared<ShapeAttrProblem>();
  p->family = name_;
  p->dims = s;
  p->attrs = std::move(attrs);
  return p;
}

std::unique_ptr<PreparedOp> ElementwiseFamily::oneKernel(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                         const StorageFormat& f, Launch l,
                                                         SingleKernelOp::ScalarArgs scalars) const {
  return std::make_unique<SingleKernelOp>(ctx, slots(), buildProgram(ctx, v, p, f, 1), name_ + "_" + v.name, l,
                                          std::move(scalars));
}

std::vector<float> randomNonZero(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<float> mag(0.25f, 4.0f);
  std::bernoulli_distribution neg(0.5);
  std::vector<float> v(n);
  for (auto& x : v) x = neg(rng) ? -mag(rng) : mag(rng);
  return v;
}

}  // namespace sdspeed
