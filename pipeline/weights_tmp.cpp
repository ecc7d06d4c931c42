// TEMPORARY folder loader for development until the weights branch lands.
#include <map>
#include "pipeline/safetensors.h"
#include "pipeline/weights.h"
#include "runtime/cl_error.h"
namespace sdspeed {
namespace {
class Folder : public WeightSource {
 public:
  explicit Folder(std::string p) : f_(p) {}
  std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const override {
    if (!f_.contains(name)) throw Error(f_.path() + ": no tensor " + name);
    if (f_.info(name).shape != shape) throw Error(f_.path() + ": " + name + " shape differs");
    return f_.toFloat(name);
  }
  bool has(const std::string& name) const override { return f_.contains(name); }
  std::string describe() const override { return f_.path(); }
  std::string diskDType(const std::string& name) const override { return dtypeName(f_.info(name).dtype); }
  SafetensorsFile f_;
};
}  // namespace
std::unique_ptr<WeightSource> openFolderWeights(const std::string& dir, const std::string& component) {
  std::string file = component == "text_encoder" ? "model.safetensors" : "diffusion_pytorch_model.safetensors";
  return std::make_unique<Folder>(dir + "/" + component + "/" + file);
}
}  // namespace sdspeed
namespace sdspeed {
std::unique_ptr<WeightSource> openSingleFileWeights(const std::string&, const std::string&, const nlohmann::json&,
                                                     const nlohmann::json&) {
  throw Error("single file: not yet");
}
std::unique_ptr<WeightSource> randomWeights(uint64_t, const std::string&) { throw Error("random: not yet"); }
}  // namespace sdspeed
