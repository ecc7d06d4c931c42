// Internal to pipeline/schedulers: reading a diffusers scheduler config, the shared
// noise-schedule tables.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sdspeed::sched {

// diffusers config values with the scheduler's own defaults for missing (or null) keys.
class ConfigReader {
 public:
  ConfigReader(const std::string& jsonText, std::string label, std::string scheduler);
  double number(const char* key, double def) const;
  int integer(const char* key, int def) const;
  bool boolean(const char* key, bool def) const;
  std::string string(const char* key, const std::string& def) const;
  bool has(const char* key) const;  // present and not null
  const nlohmann::json& raw(const char* key) const;
  // Throws "<label>: <scheduler>: key=value is not supported (what)".
  [[noreturn]] void unsupported(const char* key, const std::string& value, const std::string& why) const;
  // Throws unless the key is absent/null or equals the supported value.
  void require(const char* key, bool supported, bool def) const;
  void require(const char* key, const std::string& supported, const std::string& def) const;
  const std::string& label() const { return label_; }

 private:
  [[noreturn]] void wrongType(const char* key, const char* type) const;
  nlohmann::json j_;
  std::string label_, scheduler_;
};

// Replaces Python's Infinity / -Infinity / NaN literals outside strings by strings of
// the same text, which number() reads back as infinities / NaN.
std::string quoteNonFiniteLiterals(const std::string& text);

// betas (linear, scaled_linear, squaredcos_cap_v2 or trained_betas) -> alphas_cumprod,
// float32 as diffusers computes them.
std::vector<float> alphasCumprod(const ConfigReader& cfg);

// diffusers' ((1 - alphas_cumprod) / alphas_cumprod) ** 0.5 in float32.
std::vector<float> trainSigmas(const std::vector<float>& alphasCumprod);

// np.interp(t, arange(len(table)), table) in double, as diffusers calls it.
double interp(double t, const std::vector<float>& table);

// numpy's round (half to even).
double roundHalfEven(double v);

// n values of np.linspace(a, b, n) (float64, numpy's formula).
std::vector<double> linspace(double a, double b, int n);

}  // namespace sdspeed::sched
