#include "tuning/check.h"

#include <algorithm>
#include <memory>
#include <random>
#include <sstream>

#include "runtime/cl_error.h"

namespace sdspeed {
namespace {

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

}  // namespace

CheckResult checkCase(Context& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p,
                      const Problem& prob, const StorageFormat& f, uint64_t seed) {
  CheckResult r;
  r.family = fam.name();
  r.variant = v.name;
  r.params = p.text();
  r.storage = f.name();
  r.problem = prob.text();
  if (std::string why = fam.unsupportedReason(v, p, prob, f, ctx.device()); !why.empty()) {
    r.status = Status::Unsupported;
    r.message = why;
    return r;
  }
  std::unique_ptr<PreparedOp> op;
  try {
    op = fam.prepare(ctx, v, p, prob, f);
  } catch (const Error& e) {
    r.status = Status::BuildFailed;
    r.message = e.what();
    return r;
  }

  const auto slots = fam.slots();
  const auto shapes = fam.shapes(prob);
  std::mt19937_64 rng(seed);
  std::vector<HostTensor> inputs = fam.makeInputs(prob, rng);
  std::vector<std::unique_ptr<DeviceTensor>> tensors;
  std::vector<DeviceTensor*> args;
  int outSlot = -1;
  try {
    for (size_t i = 0; i < slots.size(); ++i) {
      const StorageFormat sf = slots[i].activation ? f : StorageFormat{};
      TensorDesc d{shapes[i], sf};
      const bool out = slots[i].access == Access::Write;
      tensors.push_back(std::make_unique<DeviceTensor>(ctx, d, out));
      if (out) {
        outSlot = static_cast<int>(i);
        tensors.back()->poison();
        tensors.back()->writeCanary();
      } else {
        // The reference sees exactly what the device holds (f16 inputs rounded).
        inputs[i].data = unpackTensor(d, packTensor(d, inputs[i].data));
        tensors.back()->upload(inputs[i].data);
      }
      args.push_back(tensors.back().get());
    }
    if (outSlot < 0) throw Error(fam.name() + " declares no output slot");
    {
      auto events = op->enqueue(args);
      for (auto& e : events) {
        cl_event ev = e.get();
        clCheck(clWaitForEvents(1, &ev), "clWaitForEvents");
      }
      ctx.finish();
    }
  } catch (const Error& e) {
    r.status = Status::RunFailed;
    r.message = e.what();
    return r;
  }

  const Tolerance tol = fam.tolerance(f.dtype);
  std::vector<double> ref = fam.reference(prob, inputs);
  DeviceTensor& out = *tensors[static_cast<size_t>(outSlot)];
  const auto bytes = out.downloadBytes();
  r.cmp = compareToReference(unpackTensor(out.desc(), bytes), ref, tol);
  const auto phys = physicalToFloats(out.desc(), bytes);
  for (size_t idx : paddingIndices(out.desc()))
    if (phys[idx] != 0.0f) ++r.badPadding;
  r.canaryIntact = out.canaryIntact();
  if (!r.cmp.pass(tol) || r.badPadding || !r.canaryIntact) {
    r.status = Status::Inaccurate;
    r.message = describeFailure(r, tol);
  }
  return r;
}

std::vector<ParamPoint> samplePoints(const VariantDef& v, const DeviceInfo& dev, int extra, uint64_t seed) {
  std::vector<ParamPoint> out;
  const ParamPoint def = v.defaults();
  if (v.violatedConstraint(def).empty() && v.deviceLimitReason(def, dev).empty()) out.push_back(def);
  std::vector<ParamPoint> space;
  for (auto& p : v.space())
    if (v.deviceLimitReason(p, dev).empty() && !(p == def)) space.push_back(p);
  std::mt19937_64 rng(seed);
  std::shuffle(space.begin(), space.end(), rng);
  for (int i = 0; i < extra && i < static_cast<int>(space.size()); ++i) out.push_back(space[i]);
  return out;
}

}  // namespace sdspeed
