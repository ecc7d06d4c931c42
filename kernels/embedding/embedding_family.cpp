#include "kernels/embedding/embedding_family.h"

#include <algorithm>

#include "reference/elementwise.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

int64_t attr(const ShapeAttrProblem& p, const char* name) { return std::stoll(p.attrs.at(name)); }

}  // namespace

OpEvents EmbeddingOp::enqueue(const std::vector<DeviceTensor*>& tensors) {
  checkTokenIds(tensors.at(0)->download(), vocab_);
  return gather_->enqueue(tensors);
}

EmbeddingFamily::EmbeddingFamily()
    : ElementwiseFamily("embedding", {slicesVariant("a work-item per (sample, output slice, ITEMS tokens)")}) {}

ProblemPtr EmbeddingFamily::problem(Shape y, int64_t vocab, int64_t positions) const {
  return makeProblem(y, {{"vocab", std::to_string(vocab)}, {"positions", std::to_string(positions)}});
}

std::vector<TensorSlot> EmbeddingFamily::slots() const {
  return {{"ids", Access::Read, false, /*hostInput=*/true}, {"tok", Access::Read, false}, {"pos", Access::Read, false},
          {"y", Access::Write, true}};
}

std::vector<ProblemPtr> EmbeddingFamily::checkProblems(bool full) const {
  // Odd C (partial slice), fewer tokens than positions, and CLIP's width and length
  // with a small vocabulary (the full table is 150 MB).
  std::vector<ProblemPtr> out = {problem({2, 6, 1, 5}, 11, 7), problem({1, 13, 1, 9}, 100, 9),
                                 problem({2, 768, 1, 77}, 1000, 77)};
  if (!full) return out;
  out.push_back(problem({2, 768, 1, 77}, 49408, 77));  // SD 1.5's CLIP ViT-L/14 text encoder
  return out;
}

std::vector<Shape> EmbeddingFamily::shapes(const Problem& p) const {
  const auto& e = get(p);
  const Shape& y = e.dims;
  return {{y.n, 1, 1, y.w}, {attr(e, "vocab"), y.c, 1, 1}, {attr(e, "positions"), y.c, 1, 1}, y};
}

std::vector<HostTensor> EmbeddingFamily::makeInputs(const Problem& p, std::mt19937_64& rng) const {
  auto in = ElementwiseFamily::makeInputs(p, rng);  // random non-zero tables
  std::uniform_int_distribution<int64_t> id(0, attr(get(p), "vocab") - 1);
  for (auto& v : in[0].data) v = static_cast<float>(id(rng));
  return in;
}

std::vector<double> EmbeddingFamily::reference(const Problem& p, const std::vector<HostTensor>& in) const {
  return embeddingReference(get(p).dims, attr(get(p), "vocab"), in[0].data, in[1].data, in[2].data);
}

Tolerance EmbeddingFamily::tolerance(DType dtype) const {
  // One float add of two table entries: the double reference is exact, the kernel's
  // sum is it rounded once (2^-24 relative). f16 storage rounds again (2^-11).
  if (dtype == DType::F32) return {0, 2e-7, 2e-7};
  return {1e-6, 1e-3, 1e-3};
}

ProblemPtr EmbeddingFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  AttrReader r(name_, attrs, {"vocab", "positions"});
  const int64_t vocab = r.getInt("vocab", 49408, 1, 1 << 24);  // ids are exact floats below 2^24
  const int64_t positions = r.getInt("positions", 77, 1, 1 << 20);
  if (shape.h != 1) throw Error("embedding: the output is a token tensor [B, C, 1, S], got " + shape.text());
  if (shape.w > positions)
    throw Error("embedding: " + std::to_string(shape.w) + " tokens but positions=" + std::to_string(positions));
  return make(shape, {{"vocab", std::to_string(vocab)}, {"positions", std::to_string(positions)}});
}

size_t EmbeddingFamily::minBytes(const Problem& p, const StorageFormat& f) const {
  const Shape& y = get(p).dims;
  const int64_t rows = std::min(y.n * y.w, attr(get(p), "vocab"));
  // Token ids are f32 host inputs; the tok and pos rows read are in the weight format.
  const size_t params = static_cast<size_t>(y.n * y.w) * sizeof(float) +
                        static_cast<size_t>((rows + y.w) * y.c) * f.weightElementBytes();
  return params + static_cast<size_t>(y.elements()) * TensorDesc{y, f}.elementBytes();
}

std::unique_ptr<PreparedOp> EmbeddingFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                     const Problem& prob, const StorageFormat& f) const {
  return std::make_unique<EmbeddingOp>(oneKernel(ctx, v, p, f, sliceLaunch(get(prob).dims, p["WG"], p["ITEMS"])),
                                       attr(get(prob), "vocab"));
}

double EmbeddingFamily::minFlops(const Problem& p) const { return static_cast<double>(shapes(p).back().elements()); }

}  // namespace sdspeed
