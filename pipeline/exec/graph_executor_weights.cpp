// GraphExecutor's weights as the checkpoint file holds them: quantized blocks and f16/f32
// values uploaded (or streamed) from the mapped file after a finiteness check, and the
// weight format of every tensor with the report's per-kind counts.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "pipeline/exec/graph_executor.h"
#include "pipeline/exec/graph_executor_internal.h"
#include "pipeline/exec/weight_kinds.h"
#include "pipeline/finite.h"
#include "pipeline/safetensors.h"
#include "runtime/quant/quant.h"

namespace sdspeed {

bool GraphExecutor::uploadQuantizedFromFile(const WeightSource& weights, size_t id, const TensorDesc& desc) {
  // Blocks `sdspeed quantize` wrote in this format: uploaded (or streamed) as they are,
  // from the mapped file, after checking every scale is finite (what checkFiniteWeight
  // does for values). Another format or layout in the file: not these bytes (false).
  const GraphTensor& t = graph_.tensors()[id];
  const auto f = desc.format.dtype == DType::Q8_0 ? quant::Format::Q8_0 : quant::Format::Q4_0;
  const auto mapped = weights.mappedBytes(t.name, f == quant::Format::Q8_0 ? "Q8_0" : "Q4_0");
  if (mapped.empty() || mapped.size() != desc.bytes()) return false;
  const auto* bytes = reinterpret_cast<const uint8_t*>(mapped.data());
  if (const int64_t b = quant::firstNonFiniteScale(f, bytes, mapped.size()); b >= 0)
    throw Error(graph_.component() + " weight " + t.name + " (" + weights.describe() + "): block " + std::to_string(b) +
                " has a non-finite scale");
  memory_.quantizedFromFileBytes += mapped.size();
  placeFileWeight(id, desc, {bytes, mapped.size()});
  return true;
}

void GraphExecutor::placeFileWeight(size_t id, const TensorDesc& desc, std::span<const uint8_t> bytes) {
  if (streamed_[id]) {  // uploaded before every run (steady-only: once) from the file's pages
    (steadyOnlyWeight_[id] ? memory_.streamedOnceBytes : memory_.streamedBytes) += desc.bytes();
    hostWeights_[id] = bytes;
    memory_.streamedMappedBytes += bytes.size();
    return;
  }
  auto d = be_.makeTensor(desc);
  d->uploadBytes(bytes);
  memory_.weightBytes += desc.bytes();
  tensors_[id] = std::move(d);
}

bool GraphExecutor::uploadFloatFromFile(const WeightSource& weights, size_t id, const TensorDesc& desc) {
  const GraphTensor& t = graph_.tensors()[id];
  const bool half = desc.format.dtype == DType::F16;
  const auto mapped = weights.mappedBytes(t.name, half ? "F16" : "F32");
  if (mapped.empty() || mapped.size() != desc.bytes() || weights.storedShape(t.name) != t.diskShape) return false;
  const auto* bytes = reinterpret_cast<const uint8_t*>(mapped.data());
  // checkFiniteWeight on the stored bits: an all-ones exponent is inf or NaN (an f16 file's
  // values fit f16, so checkFitsF16 has nothing to find); the element found is widened and
  // named by nonFiniteName, as load()'s values would be.
  const size_t n = mapped.size() / (half ? 2 : 4);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, bytes + i * (half ? 2 : 4), half ? 2 : 4);  // little-endian, as the host
    const bool nonFinite = half ? (bits & 0x7C00u) == 0x7C00u : (bits & 0x7F800000u) == 0x7F800000u;
    if (!nonFinite) continue;
    const float v = half ? halfToFloat(static_cast<uint16_t>(bits)) : std::bit_cast<float>(bits);
    throw Error(graph_.component() + " weight " + t.name + " holds " + nonFiniteName(v) + " at element " +
                std::to_string(i) + " of " + std::to_string(n) +
                ": the checkpoint has a non-finite value (every output would be NaN)");
  }
  memory_.floatFromFileBytes += mapped.size();
  placeFileWeight(id, desc, {bytes, mapped.size()});
  return true;
}

void GraphExecutor::assignWeightFormats() {
  // Under int8/int4 the report counts the blocks and the f16 weights, with the reason.
  std::vector<std::string> why;
  weightFormat_ = graphWeightFormats(graph_, nodeFormat_, &why);
  const auto& ts = graph_.tensors();
  // Per layer kind, in any format: the node's weights (its matrix and bias).
  std::vector<bool> counted(ts.size(), false);
  for (size_t i = 0; i < graph_.nodes().size(); ++i) {
    const GraphNode& n = graph_.nodes()[i];
    const std::string kind = nodeWeightKind(n);
    if (kind.empty()) continue;
    auto& k = memory_.weightKinds[kind];
    k.format = dtypeName(nodeFormat_[i].weights);
    for (int a : n.args) {
      if (a < 0 || ts[static_cast<size_t>(a)].kind != GraphTensor::Kind::Weight || counted[static_cast<size_t>(a)]) continue;
      counted[static_cast<size_t>(a)] = true;
      ++k.tensors;
      k.bytes += TensorDesc{ts[static_cast<size_t>(a)].shape, weightFormat_[static_cast<size_t>(a)]}.bytes();
    }
  }
  if (std::none_of(nodeFormat_.begin(), nodeFormat_.end(), [](const StorageFormat& f) { return isQuantized(f.weights); }))
    return;
  for (size_t id = 0; id < ts.size(); ++id) {
    if (ts[id].kind != GraphTensor::Kind::Weight) continue;
    const TensorDesc d{ts[id].shape, weightFormat_[id]};
    std::string key = dtypeName(d.format.dtype);
    if (!isQuantized(d.format.dtype)) key += " (" + why[id] + ")";
    auto& g = memory_.weightGroups[key];
    ++g.tensors;
    g.bytes += d.bytes();
  }
}

}  // namespace sdspeed
