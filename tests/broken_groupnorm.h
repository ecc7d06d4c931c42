// A GroupNorm family whose one variant ("plain") runs tests/data/groupnorm_broken.cl
// with a BUG switch: the real GroupNorm problems, inputs, reference and tolerances,
// with kernels that fail in known ways (see the .cl file). Used by the harness tests
// and the tuner's status-recording test.
#pragma once

#include <fstream>
#include <sstream>

#include "kernels/groupnorm/groupnorm_family.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {

class BrokenGroupNorm : public GroupNormFamily {
 public:
  BrokenGroupNorm() {
    VariantDef v;
    v.name = "plain";
    v.summary = "one work-group per group, with a BUG switch";
    v.params = {{"WG", {64}, "work-group size"}, {"BUG", {0, 1, 2, 3, 4, 5, 9}, "which bug"}};
    v.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]); };
    variants_ = {v};
  }
  std::string name() const override { return "groupnorm_broken"; }
  std::string sourceText(const Context&) const override {
    std::ifstream in(std::string(SDSPEED_TEST_DATA) + "/groupnorm_broken.cl");
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str().empty()) throw Error("cannot read groupnorm_broken.cl");
    return ss.str();
  }
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                      const Problem& prob, const StorageFormat& f) const override {
    const auto& gp = dynamic_cast<const GroupNormProblem&>(prob);
    const size_t wg = static_cast<size_t>(p["WG"]);
    const Launch l = Launch::cover(2, {wg, static_cast<size_t>(gp.dims.n * gp.attrs.groups), 1}, {wg, 1, 1});
    const int32_t groups = gp.attrs.groups, flags = (gp.attrs.silu ? 1 : 0) | (gp.attrs.residual ? 2 : 0);
    const float eps = static_cast<float>(gp.attrs.eps);
    return std::make_unique<SingleKernelOp>(ctx, slots(), buildProgram(ctx, v, p, f, 1), "gn_plain", l,
                                            [=](KernelArgs& a) { a.i32("G", groups).f32("eps", eps).i32("flags", flags); });
  }
};

}  // namespace sdspeed
