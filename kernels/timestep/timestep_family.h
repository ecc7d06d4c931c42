// The timestep family: timesteps t [B] (an f32 parameter [B, 1, 1, 1]) -> the
// sinusoidal embedding y [B, dim, 1, 1] exactly as diffusers get_timestep_embedding
// (scale 1, max_period 10000). The problem's shape is y's ([B, dim, 1, 1]); attributes
// flip_sin_to_cos (0/1) and freq_shift (downscale_freq_shift, a number). Defaults are
// SD 1.5's Timesteps(320, flip_sin_to_cos=True, downscale_freq_shift=0): 1 and 0.
#pragma once

#include "kernels/common/elementwise.h"

namespace sdspeed {

class TimestepFamily : public ElementwiseFamily {
 public:
  TimestepFamily();
  std::vector<TensorSlot> slots() const override;
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<HostTensor> makeInputs(const Problem& p, std::mt19937_64& rng) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;
  // Per output element t * freq and one sin or cos (2); per frequency its exponent
  // (multiply, divide, exp: 3). The zero pad column of an odd dim counts nothing.
  double minFlops(const Problem& p) const override;
  // Attributes: flip_sin_to_cos (0, 1; default 1), freq_shift (default 0; dim/2 - freq_shift > 0).
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;

  ProblemPtr problem(int64_t batch, int64_t dim, bool flip, double shift) const;
};

}  // namespace sdspeed
