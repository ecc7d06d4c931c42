#include "tuning/check.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>

#include "runtime/error.h"
#include "runtime/hash.h"

namespace sdspeed {

std::string describeFailure(const CheckResult& r, const Tolerance& t) {
  std::ostringstream m;
  if (r.cmp.nonFinite) m << r.cmp.nonFinite << " elements not written or not finite (first at " << r.cmp.firstBad << "); ";
  if (r.cmp.overTolerance)
    m << r.cmp.overTolerance << " elements over atol " << t.atol << " + rtol " << t.rtol
      << " (first at " << r.cmp.firstBad << "); ";
  if (r.cmp.relL2 > t.relL2 && !r.cmp.nonFinite) m << "rel L2 " << r.cmp.relL2 << " > " << t.relL2 << "; ";
  if (r.badPadding) m << r.badPadding << " NC4HW4 padding lanes not zero; ";
  if (!r.canaryIntact) m << "wrote past the end of the output (canary overwritten); ";
  std::string s = m.str();
  if (s.size() >= 2) s.resize(s.size() - 2);
  return s;
}

CheckResult checkCase(Backend& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p,
                      const Problem& prob, const StorageFormat& f, uint64_t seed, bool derivedWeightsPerCall) {
  CheckResult r;
  r.family = fam.name();
  r.variant = v.name;
  r.params = p.text();
  r.storage = f.name();
  r.problem = prob.text();
  if (std::string why = fam.unsupportedReason(v, p, prob, f, ctx.caps()); !why.empty()) {
    r.status = Status::Unsupported;
    r.message = why;
    return r;
  }
  std::unique_ptr<PreparedOp> op;
  try {
    op = prepareOp(ctx, fam, v, p, prob, f);
    if (derivedWeightsPerCall && op->derivedWeightBytes() > 0) op->setDerivedWeightsPerCall(true);
    r.scratchBytes = op->scratchBytes() + (op->derivedWeightsPerCall() ? 0 : op->derivedWeightBytes());
  } catch (const UnsupportedError& e) {
    r.status = Status::Unsupported;
    r.message = e.what();
    return r;
  } catch (const Error& e) {
    r.status = Status::BuildFailed;
    r.message = e.what();
    return r;
  }

  const auto data = referenceData(fam, prob, f, seed);
  std::vector<uint8_t> bytes;
  const DeviceTensor* out = nullptr;
  try {
    OpTensors t = OpTensors::create(ctx, fam, prob, f, /*withCanary=*/true);
    t.upload(data->inputs);
    out = &t.output();
    // Two launches, the output poisoned before each: state an op carries between
    // launches (split's counters, scratch reuse) is checked, not only a first run.
    for (int launch = 0; launch < 2; ++launch) {
      t.output().poison();
      t.output().writeCanary();
      for (auto& e : op->enqueue(t.args())) e->wait();
      ctx.finish();
    }
    bytes = out->downloadBytes();
    r.outputHash = Fnv1a().add(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())).hex();
    r.canaryIntact = out->canaryIntact();
    // The tolerance is the family's for the activation dtype, applied against the
    // reference on the rounded weights: those are exactly what the kernel reads and it
    // computes in f32 as it does for f32 weights, so rounding the weights adds no kernel
    // error (the rounding's own cost is reported, ungated, in relL2VsUnrounded). For
    // int8/int4 weights "rounded" is quantized + dequantized (packTensor/unpackTensor of
    // the blocks): the kernel dequantizes the same blocks exactly (d * q is exact in f32),
    // so the f32 tolerance still applies, and a kernel bug cannot hide in quantization
    // error, which relL2VsUnrounded reports apart.
    judge(r, fam.tolerance(v, f.dtype), out->desc(), bytes, data->ref);
    if (!data->refUnroundedWeights.empty())
      r.relL2VsUnrounded =
          compareToReference(unpackTensor(out->desc(), bytes), data->refUnroundedWeights, fam.tolerance(v, f.dtype))
              .relL2;
  } catch (const UnsupportedError& e) {
    r.status = Status::Unsupported;
    r.message = e.what();
  } catch (const Error& e) {
    r.status = Status::RunFailed;
    r.message = e.what();
  }
  return r;
}

void judge(CheckResult& r, const Tolerance& tol, const TensorDesc& desc, const std::vector<uint8_t>& bytes,
           const std::vector<double>& ref) {
  r.cmp = compareToReference(unpackTensor(desc, bytes), ref, tol);
  const auto phys = physicalToFloats(desc, bytes);
  r.badPadding = 0;
  for (size_t idx : paddingIndices(desc))
    if (phys[idx] != 0.0f) ++r.badPadding;
  if (!r.cmp.pass(tol) || r.badPadding || !r.canaryIntact) {
    r.status = Status::Inaccurate;
    r.message = describeFailure(r, tol);
  }
}

OpTensors OpTensors::create(Backend& ctx, const Family& fam, const Problem& prob, const StorageFormat& f,
                            bool withCanary) {
  OpTensors t;
  const auto slots = fam.slots();
  const auto shapes = fam.shapes(prob);
  for (size_t i = 0; i < slots.size(); ++i) {
    const bool isOut = slots[i].access == Access::Write;
    TensorDesc d{shapes[i], slotFormat(slots[i], f)};
    t.tensors_.push_back(ctx.makeTensor(d, isOut && withCanary));
    t.args_.push_back(t.tensors_.back().get());
    if (isOut) t.out_ = static_cast<int>(i);
  }
  if (t.out_ < 0) throw Error(fam.name() + " declares no output slot");
  return t;
}

void OpTensors::upload(const std::vector<HostTensor>& inputs) {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (static_cast<int>(i) != out_) tensors_[i]->upload(inputs[i].data);
}

std::shared_ptr<const ReferenceData> referenceData(const Family& fam, const Problem& prob, const StorageFormat& f,
                                                   uint64_t seed) {
  // Keyed by the dtypes (activations, weights), not the whole format: the inputs are
  // rounded to the stored precision only, so NCHW, NC4HW4 and image runs of one problem
  // share a reference. A few are
  // kept: a sweep over two formats alternates between them, and a large problem's
  // reference (attention at S = 4096: ~20 GFLOP in double) must not be recomputed.
  static std::mutex mu;
  static std::deque<std::pair<std::string, std::shared_ptr<const ReferenceData>>> recent;
  constexpr size_t kKeep = 3;
  const std::string key = fam.name() + "|" + prob.text() + "|" + dtypeName(f.dtype) + "|w" + dtypeName(f.weights) + "|" +
                          std::to_string(seed);
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [k, d] : recent)
      if (k == key) return d;
  }
  auto data = std::make_shared<ReferenceData>();
  std::mt19937_64 rng(seed);
  data->inputs = fam.makeInputs(prob, rng);
  const auto slots = fam.slots();
  const auto shapes = fam.shapes(prob);
  // The reference sees exactly what the device holds (f16 inputs and f16 weights
  // rounded); `asDrawn` keeps the weights as drawn for the unrounded comparison.
  const StorageFormat rounding{f.dtype, Storage::Buffer, Layout::NCHW, f.weights};
  std::vector<HostTensor> asDrawn;
  bool weightsRounded = false;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].access == Access::Write) continue;
    if (slots[i].weight() && f.weights != DType::F32) {
      if (!weightsRounded) asDrawn = data->inputs;
      weightsRounded = true;
    }
    const TensorDesc d{shapes[i], slotFormat(slots[i], rounding)};
    data->inputs[i].data = unpackTensor(d, packTensor(d, data->inputs[i].data));
  }
  data->ref = fam.reference(prob, data->inputs);
  if (weightsRounded) {
    for (size_t i = 0; i < slots.size(); ++i)
      if (!slots[i].weight()) asDrawn[i] = data->inputs[i];  // activations rounded as the device holds them
    data->refUnroundedWeights = fam.reference(prob, asDrawn);
  }
  std::lock_guard<std::mutex> lock(mu);
  recent.emplace_front(key, data);
  if (recent.size() > kKeep) recent.pop_back();
  return data;
}

std::vector<ParamPoint> samplePoints(const VariantDef& v, const DeviceCaps& dev, int extra, uint64_t seed,
                                     const Problem* prob) {
  std::vector<ParamPoint> out;
  const ParamPoint def = prob ? v.defaultsFor(*prob) : v.defaults();
  if (v.violatedConstraint(def).empty() && v.deviceLimitReason(def, dev).empty()) out.push_back(def);
  std::vector<ParamPoint> space;
  for (auto& p : v.space())
    if (v.deviceLimitReason(p, dev).empty() && !(p == def)) space.push_back(p);
  std::mt19937_64 rng(seed);
  std::shuffle(space.begin(), space.end(), rng);
  for (int i = 0; i < extra && i < static_cast<int>(space.size()); ++i) out.push_back(space[i]);
  return out;
}

std::string lackedCapability(const std::string& reason) {
  // A family (or a variant) the backend has no kernels for (kernels/lowering.h) is summed
  // up the same way: "family conv has no vulkan kernels".
  if (const size_t k = reason.find(" kernels"); k != std::string::npos && reason.rfind(" has no ", k) != std::string::npos)
    return reason.substr(0, reason.find('\n'));
  const size_t at = reason.find("device lacks ");
  if (at == std::string::npos) return {};
  return reason.substr(at, reason.find('\n', at) - at);
}

}  // namespace sdspeed
