#include "tuning/surrogate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace sdspeed {

GpSurrogate::GpSurrogate(const std::vector<Candidate>& space, SurrogateSettings settings)
    : s_(settings), variant_(space.size()), pos_(space.size()), isMeasured_(space.size(), 0), v_(space.size()),
      vNorm2_(space.size(), 0.0) {
  std::map<const VariantDef*, int> ids;
  std::map<std::string, size_t> dims;  // parameter name -> coordinate (shared across variants)
  for (const auto& c : space)
    for (const auto& p : c.variant->params) dims.emplace(p.name, dims.size());
  for (size_t i = 0; i < space.size(); ++i) {
    const Candidate& c = space[i];
    variant_[i] = ids.emplace(c.variant, static_cast<int>(ids.size())).first->second;
    pos_[i].assign(dims.size(), 0.0);
    for (const auto& p : c.variant->params) {
      const std::vector<int> values = ascendingValues(p);
      const size_t at = ascendingPosition(values, c.point[p.name]);
      pos_[i][dims[p.name]] =
          values.size() > 1 ? static_cast<double>(at) / static_cast<double>(values.size() - 1) : 0.0;
    }
  }
}

double GpSurrogate::kernel(size_t a, size_t b) const {
  if (variant_[a] != variant_[b]) return s_.cross;
  double d2 = 0;
  for (size_t k = 0; k < pos_[a].size(); ++k) d2 += (pos_[a][k] - pos_[b][k]) * (pos_[a][k] - pos_[b][k]);
  return s_.cross + (1 - s_.cross) * std::exp(-d2 / (2 * s_.lengthScale * s_.lengthScale));
}

void GpSurrogate::add(size_t index, double cost) {
  if (isMeasured_[index]) return;
  // New Cholesky row: l = L^-1 k(measured, index) (kept in v_[index]), d = sqrt(k + noise - |l|^2).
  const std::vector<double> l = v_[index];  // a copy: v_[index] grows below
  const double d = std::sqrt(std::max(1e-12, kernel(index, index) + s_.noise - vNorm2_[index]));
  L_.push_back(l);
  L_.back().push_back(d);
  for (size_t j = 0; j < v_.size(); ++j) {
    double dot = 0;
    for (size_t k = 0; k < l.size(); ++k) dot += l[k] * v_[j][k];
    const double c = (kernel(index, j) - dot) / d;
    v_[j].push_back(c);
    vNorm2_[j] += c * c;
  }
  measured_.push_back(index);
  cost_.push_back(cost);
  isMeasured_[index] = 1;
}

std::vector<double> GpSurrogate::standardizedTargets() const {
  // A zero time (a no-op kernel under a coarse timer) must not become log(0) = -inf
  // and turn every prediction into NaN: times are floored at 1e-9.
  auto logTime = [](double c) { return std::log(std::max(c, 1e-9)); };
  double worst = -INFINITY;
  for (double c : cost_)
    if (std::isfinite(c)) worst = std::max(worst, logTime(c));
  if (!std::isfinite(worst)) worst = 0;
  std::vector<double> y;
  for (double c : cost_) y.push_back(std::isfinite(c) ? logTime(c) : worst + std::log(2.0));
  double mean = 0, var = 0;
  for (double v : y) mean += v;
  mean /= static_cast<double>(y.size());
  for (double v : y) var += (v - mean) * (v - mean);
  const double sd = var > 0 ? std::sqrt(var / static_cast<double>(y.size())) : 1.0;
  for (double& v : y) v = (v - mean) / sd;
  return y;
}

std::vector<double> GpSurrogate::solveLower(const std::vector<double>& rhs) const {
  std::vector<double> z(rhs.size());
  for (size_t i = 0; i < rhs.size(); ++i) {
    double s = rhs[i];
    for (size_t k = 0; k < i; ++k) s -= L_[i][k] * z[k];
    z[i] = s / L_[i][i];
  }
  return z;
}

void GpSurrogate::posterior(size_t index, const std::vector<double>& z, double& mean, double& sd) const {
  mean = 0;
  for (size_t k = 0; k < z.size(); ++k) mean += v_[index][k] * z[k];
  sd = std::sqrt(std::max(1e-12, kernel(index, index) - vNorm2_[index]));
}

void GpSurrogate::predict(size_t index, double& mean, double& sd) const {
  posterior(index, measured_.empty() ? std::vector<double>{} : solveLower(standardizedTargets()), mean, sd);
}

long GpSurrogate::bestExpectedImprovement() const {
  if (measured_.empty()) return isMeasured_.empty() ? -1 : 0;
  const std::vector<double> y = standardizedTargets();
  // The best *working* point is the one to improve on; with none, the best of all.
  double best = INFINITY;
  for (size_t k = 0; k < y.size(); ++k)
    if (std::isfinite(cost_[k])) best = std::min(best, y[k]);
  if (!std::isfinite(best)) best = *std::min_element(y.begin(), y.end());
  const std::vector<double> z = solveLower(y);
  long pick = -1;
  double pickEi = -INFINITY;
  for (size_t j = 0; j < v_.size(); ++j) {
    if (isMeasured_[j]) continue;
    double mean = 0, sd = 0;
    posterior(j, z, mean, sd);
    const double u = (best - mean) / sd;
    const double ei = sd * (u * 0.5 * std::erfc(-u / std::sqrt(2.0)) + std::exp(-0.5 * u * u) / std::sqrt(2 * M_PI));
    if (ei > pickEi) {
      pickEi = ei;
      pick = static_cast<long>(j);
    }
  }
  return pick;
}

}  // namespace sdspeed
