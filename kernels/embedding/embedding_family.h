// The embedding family (CLIP text encoder input): token ids [B, 1, 1, S] -> token
// tensor y [B, C, 1, S] = tok[id] + pos[position], positions 0..S-1. The problem's
// shape is y's; attributes vocab (V, rows of the token table) and positions (P, rows
// of the position table, >= S). ids, tok and pos are f32 parameter buffers. Every
// launch first reads the ids back and throws Error for one outside [0, V) (the host
// check the gather relies on; it costs a small blocking read per launch).
#pragma once

#include "kernels/common/elementwise.h"

namespace sdspeed {

// The embedding op on any backend: checks the ids on the host (throws Error for one
// outside [0, vocab)), then runs the backend's gather.
class EmbeddingOp : public PreparedOp {
 public:
  EmbeddingOp(std::unique_ptr<PreparedOp> gather, int64_t vocab) : gather_(std::move(gather)), vocab_(vocab) {}
  OpEvents enqueue(const std::vector<DeviceTensor*>& tensors) override;

 private:
  std::unique_ptr<PreparedOp> gather_;
  int64_t vocab_;
};

class EmbeddingFamily : public ElementwiseFamily {
 public:
  EmbeddingFamily();
  std::vector<TensorSlot> slots() const override;
  std::vector<ProblemPtr> checkProblems(bool full) const override;
  std::vector<Shape> shapes(const Problem& p) const override;
  std::vector<HostTensor> makeInputs(const Problem& p, std::mt19937_64& rng) const override;
  std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const override;
  Tolerance tolerance(DType dtype) const override;
  // One add (token row + position row) per output element.
  double minFlops(const Problem& p) const override;
  // Attributes: vocab (default 49408, CLIP), positions (default 77, CLIP; >= S).
  ProblemPtr makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const override;
  // The ids, the table rows the ids select (at most B*S), the first S position rows
  // and the output: not the whole token table (CLIP's is 150 MB).
  size_t minBytes(const Problem& p, const StorageFormat& f) const override;
  std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                      const StorageFormat& f) const override;

  ProblemPtr problem(Shape y, int64_t vocab, int64_t positions) const;
};

}  // namespace sdspeed
