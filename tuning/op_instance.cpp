#include "tuning/op_instance.h"

#include <cmath>
#include <sstream>
#include <vector>

#include "runtime/opencl/cl_error.h"

namespace sdspeed {

std::string OpInstance::text() const {
  std::string t = family + " " + shape.text();
  for (const auto& [k, v] : attrs) t += " " + k + "=" + v;
  return t + " " + format.name();
}

OpInstance OpInstance::parse(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.size() < 3)
    throw Error("bad op instance '" + text + "' (want: FAMILY NxCxHxW [NAME=VALUE...] DTYPE.STORAGE.LAYOUT)");
  OpInstance o;
  o.family = words.front();
  o.shape = parseShape(words[1]);
  o.format = StorageFormat::parse(words.back());
  for (size_t i = 2; i + 1 < words.size(); ++i) {
    auto eq = words[i].find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("bad attribute '" + words[i] + "' in op instance '" + text + "'");
    o.attrs[words[i].substr(0, eq)] = words[i].substr(eq + 1);
  }
  return o;
}

OpInstance OpInstance::of(const Family& fam, const Problem& prob, const StorageFormat& f) {
  // A family that reads no weights keys as f32 weights (Family::keyFormat): an f16-weight
  // run finds its f32 entries.
  return {fam.name(), prob.shape(), prob.attributes(), fam.keyFormat(f)};
}

double shapeDistance(const Shape& a, const Shape& b) {
  auto d = [](int64_t x, int64_t y) { return std::abs(std::log2(static_cast<double>(x) / static_cast<double>(y))); };
  return d(a.n, b.n) + d(a.c, b.c) + d(a.h, b.h) + d(a.w, b.w);
}

}  // namespace sdspeed
