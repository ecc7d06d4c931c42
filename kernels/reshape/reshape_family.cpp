#include "kernels/reshape/reshape_family.h"

#include "runtime/opencl/cl_error.h"

namespace sdspeed {

ReshapeFamily::ReshapeFamily()
    : ElementwiseFamily("reshape", {slicesVariant("a work-item per (sample, slice, ITEMS positions)")}) {}

std::vector<TensorSlot> ReshapeFamily::slots() const { return {{"x", Access::Read, true}, {"y", Access::Write, true}}; }

std::vector<ProblemPtr> ReshapeFamily::checkProblems(bool full) const {
  // Both directions, odd C (partial slice), non-square images, a regrouping that is
  // neither (3x10 -> 5x6).
  std::vector<ProblemPtr> out = {problem({2, 7, 3, 5}, 1), problem({1, 5, 1, 21}, 7), problem({2, 6, 3, 10}, 5),
                                 problem({2, 64, 8, 8}, 1)};
  if (!full) return out;
  // SD 1.5 at 512x512, batch 2: each transformer's image -> tokens and back.
  for (auto [c, hw] : {std::pair<int64_t, int64_t>{320, 64}, {640, 32}, {1280, 16}, {1280, 8}}) {
    out.push_back(problem({2, c, hw, hw}, 1));
    out.push_back(problem({2, c, 1, hw * hw}, hw));
  }
  return out;
}

std::vector<Shape> ReshapeFamily::shapes(const Problem& p) const {
  const auto& r = get(p);
  const int64_t h = std::stoll(r.attrs.at("h"));
  return {r.dims, {r.dims.n, r.dims.c, h, r.dims.hw() / h}};
}

std::vector<double> ReshapeFamily::reference(const Problem&, const std::vector<HostTensor>& in) const {
  return {in[0].data.begin(), in[0].data.end()};  // the logical NCHW array does not change
}

Tolerance ReshapeFamily::tolerance(DType) const {
  // A copy: the output holds exactly the stored input values (f16 -> float -> f16 is exact).
  return {0, 0, 0};
}

ProblemPtr ReshapeFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  AttrReader r(name_, attrs, {"h"});
  const int64_t h = r.getInt("h", 1, 1, shape.hw());
  if (shape.hw() % h)
    throw Error("bad reshape attribute h=" + std::to_string(h) + ": does not divide H*W = " + std::to_string(shape.hw()));
  return make(shape, {{"h", std::to_string(h)}});
}

std::unique_ptr<PreparedOp> ReshapeFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                   const Problem& prob, const StorageFormat& f) const {
  return oneKernel(ctx, v, p, f, sliceLaunch(shapes(prob)[1], p["WG"], p["ITEMS"]));
}

}  // namespace sdspeed
