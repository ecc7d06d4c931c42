// A GroupNorm family whose one variant ("plain") runs tests/data/groupnorm_broken.cl
// with a BUG switch: the real GroupNorm problems, inputs, reference and tolerances,
// with kernels that fail in known ways (see the .cl file). Used by the harness tests
// and the tuner's status-recording test.
#pragma once

#include <fstream>
#include <sstream>

#include "kernels/groupnorm/groupnorm_family.h"
#include "runtime/cl_error.h"

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
    return std::make_unique<Op>(ctx, buildProgram(ctx, v, p, f, 1), p["WG"],
                                dynamic_cast<const GroupNormProblem&>(prob));
  }

 private:
  struct Op : PreparedOp {
    Op(Context& c, cl_program program, int wg, const GroupNormProblem& prob)
        : ctx(c), kernel(c.createKernel(program, "gn_plain")), wg(wg), prob(prob) {}
    std::vector<ClEvent> enqueue(const std::vector<DeviceTensor*>& t) override {
      int i = 0;
      for (auto* tensor : t) i = tensor->setArgs(kernel.get(), i);
      setArg(kernel.get(), i++, static_cast<cl_int>(prob.attrs.groups));
      setArg(kernel.get(), i++, static_cast<cl_float>(prob.attrs.eps));
      setArg(kernel.get(), i++, static_cast<cl_int>((prob.attrs.silu ? 1 : 0) | (prob.attrs.residual ? 2 : 0)));
      Launch l{kernel.get(), 2, {static_cast<size_t>(wg), static_cast<size_t>(prob.dims.n * prob.attrs.groups), 1},
               {static_cast<size_t>(wg), 1, 1}};
      std::vector<ClEvent> ev;
      ev.push_back(enqueueLaunch(ctx.queue(), l));
      return ev;
    }
    Context& ctx;
    ClKernel kernel;
    int wg;
    GroupNormProblem prob;
  };
};

}  // namespace sdspeed
