// randomWeights (pipeline/weights.h): seeded weights for timing runs without a
// checkpoint. Counter-based, so a tensor's values depend only on (seed, component,
// name, index): element pair p of a tensor comes from splitmix64(key + p), key a hash of
// the rest, through Box-Muller. That makes them independent of load order and lets big
// tensors (SD 1.5: 1e9 values in all) be filled by several threads.
#include <cmath>
#include <numbers>
#include <thread>

#include "pipeline/weights.h"
#include "runtime/error.h"

namespace sdspeed {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// out[i] = mean + std * N(0,1) for i in [begin, end); begin even.
void fill(float* out, size_t begin, size_t end, uint64_t key, float mean, float std) {
  for (size_t i = begin; i < end; i += 2) {
    const uint64_t r = splitmix64(key + i / 2);
    const double u1 = (static_cast<double>(r >> 32) + 0.5) * 0x1p-32;  // (0, 1): log is finite
    const double u2 = static_cast<double>(r & 0xffffffffu) * 0x1p-32;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    out[i] = mean + std * static_cast<float>(radius * std::cos(angle));
    if (i + 1 < end) out[i + 1] = mean + std * static_cast<float>(radius * std::sin(angle));
  }
}

class RandomSource : public WeightSource {
 public:
  RandomSource(uint64_t seed, std::string component) : seed_(seed), component_(std::move(component)) {}

  std::vector<float> load(const std::string& name, const std::vector<int64_t>& shape) const override {
    size_t n = 1;
    for (int64_t d : shape) {
      if (d < 0) throw Error(describe() + ": tensor '" + name + "': negative dimension in the shape asked for");
      n *= static_cast<size_t>(d);
    }
    const RandomInit init = randomInit(name, shape);
    const uint64_t key = splitmix64(seed_ ^ fnv1a(component_ + "/" + name));
    std::vector<float> out(n);
    // Chunks of an even size so that pairs never straddle two threads.
    const size_t threads = n < (1u << 20) ? 1 : std::max(1u, std::thread::hardware_concurrency());
    const size_t chunk = ((n + threads - 1) / threads + 1) & ~size_t{1};
    std::vector<std::thread> pool;
    for (size_t b = chunk; b < n; b += chunk)
      pool.emplace_back(fill, out.data(), b, std::min(n, b + chunk), key, init.mean, init.std);
    fill(out.data(), 0, std::min(n, chunk), key, init.mean, init.std);
    for (std::thread& t : pool) t.join();
    return out;
  }
  bool has(const std::string&) const override { return true; }
  std::string describe() const override {
    return "random weights (seed " + std::to_string(seed_) + ", " + component_ + ")";
  }
  std::string diskDType(const std::string&) const override { return "random"; }

 private:
  uint64_t seed_;
  std::string component_;
};

}  // namespace

RandomInit randomInit(const std::string& name, const std::vector<int64_t>& shape) {
  if (name.ends_with(".bias")) return {0.0f, 0.01f};
  if (name.ends_with("_embedding.weight")) return {0.0f, 0.02f};  // token / position tables
  if (shape.size() >= 2) {
    double fanIn = 1;
    for (size_t i = 1; i < shape.size(); ++i) fanIn *= static_cast<double>(shape[i]);
    return {0.0f, fanIn > 0 ? static_cast<float>(1.0 / std::sqrt(fanIn)) : 1.0f};
  }
  return {1.0f, 0.02f};  // group / layer norm scales
}

std::unique_ptr<WeightSource> randomWeights(uint64_t seed, const std::string& component) {
  if (component != "unet" && component != "vae" && component != "text_encoder")
    throw Error("weights: unknown component '" + component + "' (unet, vae, text_encoder)");
  return std::make_unique<RandomSource>(seed, component);
}

}  // namespace sdspeed
