#include "kernels/timestep/timestep_family.h"

#include "reference/elementwise.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

bool flipOf(const ShapeAttrProblem& p) { return p.attrs.at("flip_sin_to_cos") == "1"; }
double shiftOf(const ShapeAttrProblem& p) { return std::stod(p.attrs.at("freq_shift")); }

}  // namespace

TimestepFamily::TimestepFamily()
    : ElementwiseFamily("timestep", [] {
        VariantDef v;
        v.name = "per_slice";
        v.summary = "a work-item per (output slice, sample)";
        v.params = {{"WG", {64, 32}, "work-group size"}};
        v.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]); };
        return std::vector<VariantDef>{v};
      }()) {}

ProblemPtr TimestepFamily::problem(int64_t batch, int64_t dim, bool flip, double shift) const {
  return makeProblem({batch, dim, 1, 1}, {{"flip_sin_to_cos", flip ? "1" : "0"}, {"freq_shift", attrText(shift)}});
}

std::vector<TensorSlot> TimestepFamily::slots() const { return {{"t", Access::Read, false, /*hostInput=*/true}, {"y", Access::Write, true}}; }

std::vector<ProblemPtr> TimestepFamily::checkProblems(bool full) const {
  // SD 1.5 (320, flipped, no shift), diffusers' default (no flip, shift 1) with an odd
  // dim (the zero column), and a fractional shift with dim % 4 == 2.
  std::vector<ProblemPtr> out = {problem(2, 320, true, 0), problem(3, 7, false, 1), problem(1, 34, true, 0.5)};
  if (!full) return out;
  out.push_back(problem(2, 1280, true, 0));  // a wider embedding (SDXL-size)
  return out;
}

std::vector<Shape> TimestepFamily::shapes(const Problem& p) const {
  const Shape& y = get(p).dims;
  return {{y.n, 1, 1, 1}, y};
}

std::vector<HostTensor> TimestepFamily::makeInputs(const Problem& p, std::mt19937_64& rng) const {
  // Timesteps over the whole training range, fractional ones included (schedulers
  // such as DPM-Solver produce them); never zero.
  std::uniform_real_distribution<float> t(0.5f, 999.5f);
  auto in = ElementwiseFamily::makeInputs(p, rng);
  for (auto& v : in[0].data) v = t(rng);
  return in;
}

std::vector<double> TimestepFamily::reference(const Problem& p, const std::vector<HostTensor>& in) const {
  const auto& e = get(p);
  return timestepReference(in[0].data, e.dims.c, flipOf(e), shiftOf(e));
}

Tolerance TimestepFamily::tolerance(DType dtype) const {
  // The reference is exact in double; the kernel, like diffusers in fp32, rounds the
  // argument t * freq to float. With t < 1000: the argument's own rounding is up to
  // half an ulp of 1024, 3.1e-5; exp may be 3 ulp off (OpenCL's bound, 1.8e-7
  // relative), times arg <= 1000: 1.8e-4; the float exponent's rounding adds at most
  // 9e-5 (it matters most near freq = 1/e). |d sin| <= |d arg|: 3e-4 per element at
  // worst (PoCL: 4e-5). The typical error is far smaller (rel L2). f16 storage adds
  // the output's rounding, 2^-12 for |y| <= 1.
  if (dtype == DType::F32) return {3e-4, 0, 5e-5};
  return {6e-4, 0, 1e-3};
}

ProblemPtr TimestepFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  AttrReader r(name_, attrs, {"flip_sin_to_cos", "freq_shift"});
  const int64_t flip = r.getInt("flip_sin_to_cos", 1, 0, 1);
  const double shift = r.getDouble("freq_shift", 0.0, -1e6, 1e6);
  if (shape.h != 1 || shape.w != 1) throw Error("timestep: the output is [B, dim, 1, 1], got " + shape.text());
  if (!(static_cast<double>(shape.c / 2) - shift > 0))
    throw Error("timestep: dim / 2 - freq_shift must be positive (dim " + std::to_string(shape.c) + ", freq_shift " +
                attrText(shift) + ")");
  return make(shape, {{"flip_sin_to_cos", std::to_string(flip)}, {"freq_shift", attrText(shift)}});
}

std::unique_ptr<PreparedOp> TimestepFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                    const Problem& prob, const StorageFormat& f) const {
  const auto& e = get(prob);
  const size_t wg = p["WG"];
  const Launch l = Launch::cover(2, {static_cast<size_t>(e.dims.slices()), static_cast<size_t>(e.dims.n), 1}, {wg, 1, 1});
  const cl_float shift = static_cast<cl_float>(shiftOf(e));
  const cl_int flip = flipOf(e);
  return oneKernel(ctx, v, p, f, l, [shift, flip](KernelArgs& a) {
    a.f32("shift", shift).i32("flip", flip);
  });
}

double TimestepFamily::minFlops(const Problem& p) const {
  const Shape y = shapes(p).back();
  const double half = static_cast<double>(y.c / 2);
  return static_cast<double>(y.n) * 2.0 * (2.0 * half) + 3.0 * half;
}

}  // namespace sdspeed
