#include "pipeline/quantized_file.h"

#include <sstream>

#include "runtime/error.h"

namespace sdspeed {

quant::MatrixLayout QuantizedTensor::layout() const {
  int64_t reduction = 1;
  for (size_t i = 1; i < shape.size(); ++i) reduction *= shape[i];
  return {format, shape.empty() ? 0 : shape[0], reduction};
}

std::string quantizedTensorMeta(quant::Format f, const std::vector<int64_t>& shape) {
  std::string s = std::string(quant::formatName(f)) + " ";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s;
}

std::optional<QuantizedTensor> quantizedTensor(const SafetensorsFile& file, const TensorInfo& t) {
  const auto& meta = file.metadata();
  const auto it = meta.find(kQuantizedTensorPrefix + t.name);
  if (it == meta.end()) return std::nullopt;
  const std::string where = "weights '" + file.path() + "': tensor '" + t.name + "': ";
  const auto v = meta.find(kQuantizedVersionKey);
  if (v == meta.end() || v->second != kQuantizedVersion)
    throw Error(where + "quantized by another sdspeed layout version (" + kQuantizedVersionKey + " = '" +
                (v == meta.end() ? std::string("missing") : v->second) + "', this build reads " + kQuantizedVersion + ")");
  QuantizedTensor q;
  std::istringstream in(it->second);
  std::string fmt, dims;
  in >> fmt >> dims;
  if (!quant::parseFormat(fmt, q.format) || dims.empty())
    throw Error(where + "bad metadata '" + it->second + "' (want 'q8_0|q4_0 D0,D1,..')");
  std::istringstream ds(dims);
  for (std::string d; std::getline(ds, d, ',');) {
    try {
      size_t used = 0;
      const long long x = std::stoll(d, &used);
      if (used != d.size() || x <= 0) throw std::invalid_argument("dim");
      q.shape.push_back(x);
    } catch (const std::exception&) {
      throw Error(where + "bad shape '" + dims + "' in metadata '" + it->second + "'");
    }
  }
  if (t.dtype != StDType::U8) throw Error(where + "quantized tensors are U8, this one is " + dtypeName(t.dtype));
  if (t.bytes() != q.layout().bytes())
    throw Error(where + std::to_string(t.bytes()) + " bytes, but " + it->second + " needs " +
                std::to_string(q.layout().bytes()));
  return q;
}

}  // namespace sdspeed
