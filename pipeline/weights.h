// TEMPORARY (replaced by the weights branch): the WeightSource interface.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>
namespace sdspeed {
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const = 0;
  virtual bool has(const std::string& name) const = 0;
  virtual std::string describe() const = 0;
  virtual std::string diskDType(const std::string& name) const = 0;
};
std::unique_ptr<WeightSource> openFolderWeights(const std::string& modelDir, const std::string& component);
std::unique_ptr<WeightSource> openSingleFileWeights(const std::string& file, const std::string& component,
                                                     const nlohmann::json& unetConfig, const nlohmann::json& vaeConfig);
std::unique_ptr<WeightSource> randomWeights(uint64_t seed, const std::string& component);
}  // namespace sdspeed
