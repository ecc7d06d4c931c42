#include "pipeline/run/model_shapes.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "pipeline/model/sd_graphs.h"
#include "pipeline/run/memory_check.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

struct Counted {
  ShapeEntry entry;
  double cost = 0;  // FLOPs (or bytes for pure copies) per component call
};

void collect(const Graph& g, std::map<std::string, Counted>& out) {
  const std::vector<bool> steady = g.steadyNodes();
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const GraphNode& n = g.nodes()[i];
    const Problem& p = *n.problem;
    std::string key = g.component() + " " + p.text();
    auto& c = out[key];
    if (c.entry.op.empty()) {
      c.entry = {n.family->name(), p.shape(), p.attributes(), g.component(), 0};
    }
    ++c.entry.count;
    if (steady[i]) ++c.entry.steady;
    const double flops = n.family->minFlops(p);
    c.cost += flops > 0 ? flops : static_cast<double>(n.family->minBytes(p, StorageFormat{}));
  }
}

}  // namespace

int64_t defaultImageSize(const std::string& configDir) {
  const UNetConfig u = loadUNetConfig(configDir + "/unet/config.json");
  const VaeConfig v = loadVaeConfig(configDir + "/vae/config.json");
  return u.sampleSize * v.upscale();
}

void checkImageSize(const std::string& configDir, int64_t width, int64_t height) {
  const UNetConfig u = loadUNetConfig(configDir + "/unet/config.json");
  const VaeConfig v = loadVaeConfig(configDir + "/vae/config.json");
  const int64_t f = v.upscale() * (int64_t{1} << (u.blockOut.size() - 1));
  if (width < 1 || height < 1 || width % f || height % f)
    throw Error("-W/-H must be positive multiples of " + std::to_string(f) + " for this model (VAE factor " +
                std::to_string(v.upscale()) + " x " + std::to_string(u.blockOut.size() - 1) +
                " UNet downsamplings), got " + std::to_string(width) + "x" + std::to_string(height));
}

std::vector<ShapeEntry> modelShapes(const std::string& configDir, int64_t width, int64_t height, int64_t batch) {
  checkImageSize(configDir, width, height);
  const UNetConfig u = loadUNetConfig(configDir + "/unet/config.json");
  const VaeConfig v = loadVaeConfig(configDir + "/vae/config.json");
  const ClipConfig c = loadClipConfig(configDir + "/text_encoder/config.json");
  const int64_t h = height / v.upscale(), w = width / v.upscale();
  {
    FitRequest r = fitRequest(ExecOptions{}, batch, h, w);
    r.graphsOnly = true;
    checkModelFits({u, v, c}, r, hostCapacity());  // before the graphs are built
  }
  std::map<std::string, Counted> all;
  collect(buildTextEncoderGraph(c, batch, c.positions, "text_model."), all);
  collect(buildUNetGraph(u, batch, h, w, c.positions), all);
  collect(buildVaeDecoderGraph(v, 1, h, w), all);
  std::vector<Counted> list;
  for (auto& [k, e] : all) list.push_back(e);
  std::stable_sort(list.begin(), list.end(), [](const Counted& a, const Counted& b) { return a.cost > b.cost; });
  std::vector<ShapeEntry> out;
  for (auto& e : list) out.push_back(e.entry);
  return out;
}

std::string shapeSetYaml(const std::string& name, const std::vector<ShapeEntry>& entries, const std::string& header) {
  std::ostringstream o;
  std::istringstream h(header);
  for (std::string line; std::getline(h, line);) o << "# " << line << "\n";
  o << "format: 1\nname: " << name << "\ninstances:\n";
  for (const auto& e : entries) {
    o << "  - {op: " << e.op << ", shape: " << e.shape.text() << ", attrs: {";
    bool first = true;
    for (const auto& [k, val] : e.attrs) {
      o << (first ? "" : ", ") << k << ": " << val;
      first = false;
    }
    o << "}, component: " << e.component << ", count: " << e.count;
    if (e.steady > 0) o << ", steady: " << e.steady;
    o << "}\n";
  }
  return o.str();
}

}  // namespace sdspeed
