#include "kernels/concat/concat_family.h"

#include "reference/elementwise.h"

namespace sdspeed {

ConcatFamily::ConcatFamily()
    : ElementwiseFamily("concat", {slicesVariant("a work-item per (sample, output slice, ITEMS positions)")}) {}

std::vector<TensorSlot> ConcatFamily::slots() const {
  return {{"a", Access::Read, true}, {"b", Access::Read, true}, {"y", Access::Write, true}};
}

std::vector<ProblemPtr> ConcatFamily::checkProblems(bool full) const {
  // Odd C1 (the boundary inside a slice, b gathered lane by lane) with C2 % 4 != 0,
  // C1 % 4 == 0 (b read by whole slices) with odd C2, and a small UNet-like pair.
  std::vector<ProblemPtr> out = {problem({2, 5, 3, 5}, 3), problem({1, 3, 2, 7}, 6), problem({2, 8, 3, 3}, 5),
                                 problem({2, 32, 4, 4}, 64)};
  if (!full) return out;
  // SD 1.5 at 512x512, batch 2: the up blocks' skip concatenations.
  for (auto [c1, c2, hw] : {std::tuple<int64_t, int64_t, int64_t>{1280, 1280, 8}, {1280, 640, 16},
                            {640, 320, 32}, {640, 320, 64}, {320, 320, 64}})
    out.push_back(problem({2, c1, hw, hw}, c2));
  return out;
}

std::vector<Shape> ConcatFamily::shapes(const Problem& p) const {
  const auto& c = get(p);
  Shape b = c.dims, y = c.dims;
  b.c = std::stoll(c.attrs.at("c2"));
  y.c += b.c;
  return {c.dims, b, y};
}

std::vector<double> ConcatFamily::reference(const Problem&, const std::vector<HostTensor>& in) const {
  return concatReference(in[0].shape, in[1].shape, in[0].data, in[1].data);
}

Tolerance ConcatFamily::tolerance(DType) const {
  // A copy: the output holds exactly the stored input values (f16 -> float -> f16 is exact).
  return {0, 0, 0};
}

ProblemPtr ConcatFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  AttrReader r(name_, attrs, {"c2"});
  return make(shape, {{"c2", std::to_string(r.getInt("c2", shape.c, 1, 1 << 20))}});
}

std::unique_ptr<PreparedOp> ConcatFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                  const Problem& prob, const StorageFormat& f) const {
  return oneKernel(ctx, v, p, f, sliceLaunch(shapes(prob)[2], p["WG"], p["ITEMS"]));
}

}  // namespace sdspeed
