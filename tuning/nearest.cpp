#include "tuning/nearest.h"

#include <cmath>
#include <set>
#include <string>

namespace sdspeed {
namespace {

enum class AttrKind { Equal, Size, Ignored };

// Per family, the attributes that are not "must be equal". Anything unlisted must be
// equal, so a new family or attribute crosses nothing until someone decides otherwise.
//   gemm n, conv cout: output channels, one of the GEMM's three sizes (the tile choice
//     follows M, N, K). gemm epilogue, bias, residual and conv bias, temb, residual stay
//     Equal: they add reads and code to the store, and with them Equal every recorded
//     H200 GEMM still has a neighbour (tests/test_nearest.cpp).
//   conv k, stride, pad: Equal; they change the loops and which variants apply.
//   attention kv, heads: the key count and the head split (head size = C / heads) size
//     the two matmuls. causal, mask: Equal (other loops and reads). scale: Ignored, one
//     multiply whatever its value.
//   groupnorm g: Equal (the reduction's shape, split across work-groups); eps: Ignored;
//     silu, residual: Equal.
//   layernorm eps, softmax scale, timestep freq_shift: Ignored (one operand each).
//   embedding vocab, positions: Size (table sizes); concat c2: Size (the second input's
//     channels); reshape h: Size (the output's rows). upsample scale, binary fn and
//     broadcast, activation fn, timestep flip_sin_to_cos: Equal (other index maths or
//     arithmetic per element).
AttrKind kindOf(const std::string& family, const std::string& attr) {
  static const std::set<std::pair<std::string, std::string>> sizes = {
      {"gemm", "n"},          {"conv", "cout"},           {"attention", "kv"}, {"attention", "heads"},
      {"embedding", "vocab"}, {"embedding", "positions"}, {"concat", "c2"},    {"reshape", "h"}};
  static const std::set<std::pair<std::string, std::string>> ignored = {
      {"groupnorm", "eps"}, {"layernorm", "eps"}, {"softmax", "scale"}, {"attention", "scale"},
      {"timestep", "freq_shift"}};
  if (sizes.count({family, attr})) return AttrKind::Size;
  if (ignored.count({family, attr})) return AttrKind::Ignored;
  return AttrKind::Equal;
}

// |log2(a / b)| of two canonical positive integers; nullopt for anything else (then the
// attribute is compared for equality instead).
std::optional<double> logGap(const std::string& a, const std::string& b) {
  auto num = [](const std::string& s) -> std::optional<double> {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    const double v = std::stod(s);
    return v > 0 ? std::optional<double>(v) : std::nullopt;
  };
  const auto x = num(a), y = num(b);
  if (!x || !y) return std::nullopt;
  return std::abs(std::log2(*x / *y));
}

}  // namespace

std::optional<double> instanceDistance(const OpInstance& asked, const OpInstance& tuned) {
  if (asked.family != tuned.family || !(asked.format == tuned.format)) return std::nullopt;
  double d = shapeDistance(asked.shape, tuned.shape);
  std::set<std::string> names;
  for (const auto& [k, v] : asked.attrs) names.insert(k);
  for (const auto& [k, v] : tuned.attrs) names.insert(k);
  for (const auto& name : names) {
    const auto a = asked.attrs.find(name), t = tuned.attrs.find(name);
    const bool both = a != asked.attrs.end() && t != tuned.attrs.end();
    switch (kindOf(asked.family, name)) {
      case AttrKind::Ignored:
        break;
      case AttrKind::Size:
        if (both && a->second == t->second) break;
        if (!both) return std::nullopt;
        if (const auto gap = logGap(a->second, t->second)) {
          d += *gap;
          break;
        }
        return std::nullopt;
      case AttrKind::Equal:
        if (!both || a->second != t->second) return std::nullopt;
        break;
    }
  }
  return d;
}

}  // namespace sdspeed
