#include "pipeline/schedulers/config.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "runtime/error.h"

namespace sdspeed::sched {

using nlohmann::json;

std::string quoteNonFiniteLiterals(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 16);
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      out.push_back(c);
      if (c == '\\' && i + 1 < text.size()) out.push_back(text[++i]);
      else if (c == '"') inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
      out.push_back(c);
      continue;
    }
    bool matched = false;
    for (const char* lit : {"-Infinity", "Infinity", "NaN"}) {
      size_t n = std::char_traits<char>::length(lit);
      if (text.compare(i, n, lit) == 0) {
        out += '"';
        out += lit;
        out += '"';
        i += n - 1;
        matched = true;
        break;
      }
    }
    if (!matched) out.push_back(c);
  }
  return out;
}

ConfigReader::ConfigReader(const std::string& jsonText, std::string label, std::string scheduler)
    : label_(std::move(label)), scheduler_(std::move(scheduler)) {
  try {
    j_ = json::parse(quoteNonFiniteLiterals(jsonText));
  } catch (const json::exception& e) {
    throw Error(label_ + ": not valid JSON: " + e.what());
  }
  if (!j_.is_object()) throw Error(label_ + ": a scheduler config must be a JSON object");
}

bool ConfigReader::has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
const json& ConfigReader::raw(const char* key) const { return j_[key]; }

void ConfigReader::wrongType(const char* key, const char* type) const {
  throw Error(label_ + ": " + scheduler_ + ": '" + key + "' must be " + type + ", got " + j_[key].dump());
}

void ConfigReader::unsupported(const char* key, const std::string& value, const std::string& why) const {
  throw Error(label_ + ": " + scheduler_ + ": " + key + "=" + value + " is not supported (" + why + ")");
}

double ConfigReader::number(const char* key, double def) const {
  if (!has(key)) return def;
  const json& v = j_[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  }
  wrongType(key, "a number");
}

int ConfigReader::integer(const char* key, int def) const {
  if (!has(key)) return def;
  const json& v = j_[key];
  if (!v.is_number_integer()) wrongType(key, "an integer");
  return v.get<int>();
}

bool ConfigReader::boolean(const char* key, bool def) const {
  if (!has(key)) return def;
  const json& v = j_[key];
  if (!v.is_boolean()) wrongType(key, "true or false");
  return v.get<bool>();
}

std::string ConfigReader::string(const char* key, const std::string& def) const {
  if (!has(key)) return def;
  const json& v = j_[key];
  if (!v.is_string()) wrongType(key, "a string");
  return v.get<std::string>();
}

void ConfigReader::require(const char* key, bool supported, bool def) const {
  bool v = boolean(key, def);
  if (v != supported) unsupported(key, v ? "true" : "false", "only " + std::string(supported ? "true" : "false"));
}

void ConfigReader::require(const char* key, const std::string& supported, const std::string& def) const {
  std::string v = string(key, def);
  if (v != supported) unsupported(key, "'" + v + "'", "only '" + supported + "'");
}

namespace {
std::string fmtBeta(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", b);
  return buf;
}
}  // namespace

std::vector<float> alphasCumprod(const ConfigReader& cfg) {
  const int n = cfg.integer("num_train_timesteps", 1000);
  if (n < 2 || n > 100000)
    cfg.unsupported("num_train_timesteps", std::to_string(n), "must be in [2, 100000]");
  std::vector<float> betas(static_cast<size_t>(n));
  if (cfg.has("trained_betas")) {
    const json& tb = cfg.raw("trained_betas");
    if (!tb.is_array() || tb.size() != betas.size())
      cfg.unsupported("trained_betas", "...", "must be an array of num_train_timesteps numbers");
    for (size_t i = 0; i < betas.size(); ++i) {
      if (!tb[i].is_number()) cfg.unsupported("trained_betas", tb[i].dump(), "entries must be numbers");
      betas[i] = static_cast<float>(tb[i].get<double>());
      if (!(betas[i] >= 0 && betas[i] < 1))
        cfg.unsupported("trained_betas", tb[i].dump() + " (entry " + std::to_string(i) + ")", "betas must be in [0, 1)");
    }
  } else {
    const std::string schedule = cfg.string("beta_schedule", "linear");
    const double b0 = cfg.number("beta_start", 0.0001), b1 = cfg.number("beta_end", 0.02);
    // A beta is the fraction of variance each training step replaces by noise: beta >= 1
    // makes alphas_cumprod zero or negative, the sigmas inf or NaN and the image all NaN
    // (beta_end 2 did, with exit status 0); a negative one is no variance at all.
    for (const auto& [key, b] : {std::pair<const char*, double>{"beta_start", b0}, {"beta_end", b1}})
      if (!(b >= 0 && b < 1)) cfg.unsupported(key, fmtBeta(b), "betas must be in [0, 1)");
    // torch.linspace(start, end, n, dtype=float32) on the CPU: float step, the first
    // half counted from start, the second from end.
    auto linspaceF32 = [n](float start, float end, std::vector<float>& out) {
      const float step = (end - start) / static_cast<float>(n - 1);
      for (int i = 0; i < n; ++i)
        out[i] = i < n / 2 ? start + step * static_cast<float>(i) : end - step * static_cast<float>(n - i - 1);
    };
    if (schedule == "linear") {
      linspaceF32(static_cast<float>(b0), static_cast<float>(b1), betas);
    } else if (schedule == "scaled_linear") {
      linspaceF32(static_cast<float>(std::sqrt(b0)), static_cast<float>(std::sqrt(b1)), betas);
      for (float& b : betas) b = b * b;
    } else if (schedule == "squaredcos_cap_v2") {
      auto alphaBar = [](double t) {
        double c = std::cos((t + 0.008) / 1.008 * M_PI / 2);
        return c * c;
      };
      for (int i = 0; i < n; ++i) {
        double t1 = double(i) / n, t2 = double(i + 1) / n;
        betas[i] = static_cast<float>(std::min(1 - alphaBar(t2) / alphaBar(t1), 0.999));
      }
    } else {
      cfg.unsupported("beta_schedule", "'" + schedule + "'", "linear, scaled_linear or squaredcos_cap_v2");
    }
  }
  if (cfg.boolean("rescale_betas_zero_snr", false))
    cfg.unsupported("rescale_betas_zero_snr", "true", "not implemented");
  // alphas = 1 - betas (float32); torch.cumprod accumulates in double on the CPU and
  // rounds each prefix product to float.
  std::vector<float> ac(betas.size());
  double prod = 1.0;
  for (size_t i = 0; i < betas.size(); ++i) {
    prod *= static_cast<double>(1.0f - betas[i]);
    ac[i] = static_cast<float>(prod);
  }
  return ac;
}

std::vector<float> trainSigmas(const std::vector<float>& ac) {
  std::vector<float> s(ac.size());
  for (size_t i = 0; i < ac.size(); ++i) s[i] = std::sqrt((1.0f - ac[i]) / ac[i]);
  return s;
}

double interp(double t, const std::vector<float>& table) {
  const double last = static_cast<double>(table.size() - 1);
  if (t <= 0) return table.front();
  if (t >= last) return table.back();
  size_t j = static_cast<size_t>(std::floor(t));
  double slope = (double(table[j + 1]) - double(table[j])) / 1.0;
  return slope * (t - double(j)) + double(table[j]);
}

double roundHalfEven(double v) { return std::nearbyint(v); }  // default rounding mode: to nearest even

std::vector<double> linspace(double a, double b, int n) {
  std::vector<double> out(static_cast<size_t>(std::max(n, 0)));
  if (n == 1) {
    out[0] = a;
    return out;
  }
  const double step = (b - a) / (n - 1);
  for (int i = 0; i < n; ++i) out[i] = a + i * step;  // numpy: arange * step + start
  if (n > 1) out[n - 1] = b;
  return out;
}

}  // namespace sdspeed::sched
