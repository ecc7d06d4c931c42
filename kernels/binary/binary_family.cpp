#include "kernels/binary/binary_family.h"

#include "kernels/common/half_variant.h"
#include "reference/elementwise.h"

namespace sdspeed {

BinaryFamily::BinaryFamily()
    : ElementwiseFamily("binary", {slicesVariant("a work-item per (sample, slice, ITEMS positions), LOAD4/STORE4"),
                                   halfVariant(slicesVariant(""), "slices computing in half4 (cl_khr_fp16)")}) {}

ProblemPtr BinaryFamily::problem(Shape a, const std::string& fn, bool broadcast) const {
  return makeProblem(a, {{"fn", fn}, {"broadcast", broadcast ? "1" : "0"}});
}

std::vector<TensorSlot> BinaryFamily::slots() const {
  return {{"a", Access::Read, true}, {"b", Access::Read, true}, {"y", Access::Write, true}};
}

std::vector<ProblemPtr> BinaryFamily::checkProblems(bool full) const {
  // Odd channel counts (a partial last slice) and odd spatial sizes, both functions,
  // with and without broadcast.
  std::vector<ProblemPtr> out = {
      problem({2, 6, 3, 5}, "add", false),  problem({1, 13, 1, 9}, "mul", false),
      problem({2, 7, 5, 3}, "add", true),   problem({1, 5, 2, 9}, "mul", true),
      problem({2, 64, 8, 8}, "add", true),  // a small ResNet time-embedding add
  };
  if (!full) return out;
  // SD 1.5 at 512x512, batch 2: ResNet time-embedding adds, the ResNet residual add,
  // the transformer's residual add on 64x64 tokens.
  out.push_back(problem({2, 320, 64, 64}, "add", true));
  out.push_back(problem({2, 1280, 8, 8}, "add", true));
  out.push_back(problem({2, 320, 64, 64}, "add", false));
  out.push_back(problem({2, 320, 1, 4096}, "add", false));
  out.push_back(problem({2, 640, 32, 32}, "mul", false));
  return out;
}

std::vector<Shape> BinaryFamily::shapes(const Problem& p) const {
  const auto& b = get(p);
  const Shape bs = b.attrs.at("broadcast") == "1" ? Shape{b.dims.n, b.dims.c, 1, 1} : b.dims;
  return {b.dims, bs, b.dims};
}

std::vector<double> BinaryFamily::reference(const Problem& p, const std::vector<HostTensor>& in) const {
  return binaryReference(in[0].shape, in[1].shape, get(p).attrs.at("fn"), in[0].data, in[1].data);
}

Tolerance BinaryFamily::tolerance(DType dtype) const {
  // One float add or multiply of the stored inputs: the double reference of two floats
  // is exact, the kernel's result is it rounded once (2^-24 relative). f16 storage
  // rounds the output once more (2^-11 relative).
  if (dtype == DType::F32) return {0, 2e-7, 2e-7};
  return {1e-6, 1e-3, 1e-3};
}

Tolerance BinaryFamily::tolerance(const VariantDef& v, DType dtype) const {
  if (!computesInHalf(v)) return tolerance(dtype);
  // Half arithmetic (u = 2^-11 = 4.9e-4), one operation, no reduction: f32-stored inputs
  // are rounded to half (u each), the result once more. A product is then within 3u =
  // 1.5e-3 relative; a sum within u (|a| + |b|) + u |y|, which under cancellation
  // (|a|, |b| <= 4 here) is up to 8u = 3.9e-3 absolute. relL2: ~u.
  return {4e-3, 2e-3, 2e-3};
}

ProblemPtr BinaryFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  AttrReader r(name_, attrs, {"fn", "broadcast"});
  return make(shape, {{"fn", r.getChoice("fn", "add", {"add", "mul"})},
                      {"broadcast", std::to_string(r.getInt("broadcast", 0, 0, 1))}});
}

std::unique_ptr<PreparedOp> BinaryFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                  const Problem& prob, const StorageFormat& f) const {
  const cl_int fn = get(prob).attrs.at("fn") == "mul" ? 1 : 0;
  return oneKernel(ctx, v, p, f, sliceLaunch(get(prob).dims, p["WG"], p["ITEMS"]),
                   [fn](KernelArgs& a) { a.i32("fn", fn); });
}

double BinaryFamily::minFlops(const Problem& p) const { return static_cast<double>(shapes(p).back().elements()); }

}  // namespace sdspeed
