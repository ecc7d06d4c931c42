#include "kernels/upsample/upsample_family.h"

#include "reference/elementwise.h"

namespace sdspeed {
namespace {

int scaleOf(const ShapeAttrProblem& p) { return std::stoi(p.attrs.at("scale")); }

}  // namespace

UpsampleFamily::UpsampleFamily()
    : ElementwiseFamily("upsample", {slicesVariant("a work-item per (sample, output slice, ITEMS output positions)")}) {}

std::vector<TensorSlot> UpsampleFamily::slots() const { return {{"x", Access::Read, true}, {"y", Access::Write, true}}; }

std::vector<ProblemPtr> UpsampleFamily::checkProblems(bool full) const {
  // Odd C (partial slice), odd and non-square H x W, one scale other than 2.
  std::vector<ProblemPtr> out = {makeProblem({2, 7, 3, 5}, {}), makeProblem({1, 4, 1, 9}, {}),
                                 makeProblem({1, 5, 2, 3}, {{"scale", "3"}}), makeProblem({2, 64, 8, 8}, {})};
  if (!full) return out;
  // SD 1.5 at 512x512, batch 2: the decoder-side Upsample2D inputs of the UNet.
  for (auto [c, hw] : {std::pair<int64_t, int64_t>{1280, 8}, {1280, 16}, {640, 32}})
    out.push_back(makeProblem({2, c, hw, hw}, {}));
  return out;
}

std::vector<Shape> UpsampleFamily::shapes(const Problem& p) const {
  const auto& u = get(p);
  const int s = scaleOf(u);
  return {u.dims, {u.dims.n, u.dims.c, u.dims.h * s, u.dims.w * s}};
}

std::vector<double> UpsampleFamily::reference(const Problem& p, const std::vector<HostTensor>& in) const {
  return upsampleReference(in[0].shape, scaleOf(get(p)), in[0].data);
}

Tolerance UpsampleFamily::tolerance(DType) const {
  // A copy: the output holds exactly the stored input values (f16 -> float -> f16 is exact).
  return {0, 0, 0};
}

ProblemPtr UpsampleFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  AttrReader r(name_, attrs, {"scale"});
  return make(shape, {{"scale", std::to_string(r.getInt("scale", 2, 1, 8))}});
}

std::unique_ptr<PreparedOp> UpsampleFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                    const Problem& prob, const StorageFormat& f) const {
  return oneKernel(ctx, v, p, f, sliceLaunch(shapes(prob)[1], p["WG"], p["ITEMS"]));
}

}  // namespace sdspeed
