#include "kernels/activation/activation_family.h"

#include "kernels/common/half_variant.h"
#include "reference/activation.h"
#include "runtime/opencl/cl_error.h"

namespace sdspeed {
namespace {

const ActivationProblem& asActivation(const Problem& p) {
  auto* a = dynamic_cast<const ActivationProblem*>(&p);
  if (!a) throw Error("activation given a problem of another family: " + p.text());
  return *a;
}

}  // namespace

int ActivationFamily::fnCode(const std::string& fn) {
  static const char* kFns[] = {"gelu", "gelu_tanh", "quick_gelu", "silu", "geglu"};  // the kernels' fn codes
  for (int i = 0; i < 5; ++i)
    if (fn == kFns[i]) return i;
  throw Error("unknown activation '" + fn + "' (known: gelu, gelu_tanh, quick_gelu, silu, geglu)");
}

ActivationFamily::ActivationFamily() {
  VariantDef v;
  v.name = "slices";
  v.summary = "a work-item per (sample, output slice, ITEMS positions), LOAD4/STORE4";
  v.params = {{"WG", {128, 64, 256}, "work-group size"}, {"ITEMS", {1, 2, 4}, "positions per work-item"}};
  v.workGroupSize = [](const ParamPoint& p) { return static_cast<size_t>(p["WG"]); };
  variants_ = {v, halfVariant(v, "slices computing in half4 (cl_khr_fp16)")};
}

ProblemPtr ActivationFamily::problem(Shape s, const std::string& fn) {
  fnCode(fn);
  if (fn == "geglu" && s.c % 2) throw Error("geglu needs an even channel count, got C=" + std::to_string(s.c));
  auto p = std::make_shared<ActivationProblem>();
  p->dims = s;
  p->fn = fn;
  return p;
}

std::vector<TensorSlot> ActivationFamily::slots() const {
  return {{"x", Access::Read, true}, {"y", Access::Write, true}};
}

std::vector<ProblemPtr> ActivationFamily::checkProblems(bool full) const {
  std::vector<ProblemPtr> out;
  // Odd shapes for every function; GEGLU with F % 4 != 0 so the gate starts mid-slice.
  for (const char* fn : {"gelu", "gelu_tanh", "quick_gelu", "silu"}) out.push_back(problem({2, 6, 3, 5}, fn));
  out.push_back(problem({2, 10, 1, 7}, "geglu"));   // F = 5
  out.push_back(problem({2, 64, 1, 33}, "geglu"));  // F = 32
  out.push_back(problem({1, 3072, 1, 77}, "quick_gelu"));  // CLIP MLP (4 x 768)
  if (!full) return out;
  // SD 1.5 transformer feed-forward: GEGLU 2 x 1280 -> 1280 channels at 64x64 tokens, batch 2.
  out.push_back(problem({2, 2560, 1, 4096}, "geglu"));
  out.push_back(problem({2, 1280, 64, 64}, "silu"));
  return out;
}

std::vector<Shape> ActivationFamily::shapes(const Problem& p) const {
  const auto& a = asActivation(p);
  Shape y = a.dims;
  if (a.fn == "geglu") y.c /= 2;
  return {a.dims, y};
}

std::vector<HostTensor> ActivationFamily::makeInputs(const Problem& p, std::mt19937_64& rng) const {
  const auto sh = shapes(p);
  std::normal_distribution<float> normal(0.0f, 2.5f);  // covers the curved part and both tails
  HostTensor x{sh[0], std::vector<float>(static_cast<size_t>(sh[0].elements()))};
  for (auto& v : x.data) v = normal(rng);
  return {x, {sh[1], {}}};
}

std::vector<double> ActivationFamily::reference(const Problem& p, const std::vector<HostTensor>& in) const {
  const auto& a = asActivation(p);
  return activationReference(a.dims, a.fn, in[0].data);
}

double ActivationFamily::minFlops(const Problem& p) const {
  const auto& a = asActivation(p);
  const double elements = static_cast<double>(a.dims.elements());
  if (a.fn == "geglu") return 6.0 * elements / 2;  // one output per (hidden, gate) pair
  if (a.fn == "gelu") return 5.0 * elements;
  if (a.fn == "gelu_tanh") return 9.0 * elements;
  return 4.0 * elements;  // quick_gelu, silu
}

Tolerance ActivationFamily::tolerance(DType dtype) const {
  // |y| <= ~10 for these inputs. OpenCL's erf/tanh/exp are allowed 16/5/3 ulp (full
  // profile): a few 1e-7 relative; 2e-5 relative plus 2e-6 absolute (for outputs near
  // zero, where x sigmoid(x) cancels) leaves a margin. f16 storage: inputs are rounded
  // before the reference, outputs to 2^-11 relative.
  if (dtype == DType::F32) return {2e-6, 2e-5, 5e-6};
  return {1e-3, 1e-3, 1e-3};
}

Tolerance ActivationFamily::tolerance(const VariantDef& v, DType dtype) const {
  if (!computesInHalf(v)) return tolerance(dtype);
  // Half arithmetic (u = 2^-11 = 4.9e-4): no reduction, so the error does not grow with
  // any length; each output sees the input's rounding to half, about five rounded
  // operations and one built-in (erf/tanh/exp, a few half ulp): <= ~10 u = 5e-3
  // relative. Where 1 + erf(x / sqrt 2) cancels (gelu near x = -3, |y| ~ 4e-3) the
  // built-in's few ulp of 1 times |x| / 2 is ~3e-3 absolute; exp overflowing to inf
  // (silu, quick_gelu at x < -11) gives -0 for a true value under 2e-4. Hence 5e-3
  // both ways; relL2 2e-3 (the typical error is ~u per rounding, a few 1e-4 overall).
  return {5e-3, 5e-3, 2e-3};
}

ProblemPtr ActivationFamily::makeProblem(const Shape& shape, const std::map<std::string, std::string>& attrs) const {
  std::string fn = "gelu";
  for (const auto& [k, v] : attrs) {
    if (k != "fn") throw Error("unknown activation attribute '" + k + "' (known: fn)");
    fn = v;
  }
  return problem(shape, fn);
}

std::unique_ptr<PreparedOp> ActivationFamily::prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                                      const Problem& prob, const StorageFormat& f) const {
  const auto& a = asActivation(prob);
  const auto sh = shapes(prob);
  const size_t wg = p["WG"], items = p["ITEMS"];
  const size_t perItem = (static_cast<size_t>(sh[1].hw()) + items - 1) / items;
  const Launch l = Launch::cover(3, {perItem, static_cast<size_t>(sh[1].slices()), static_cast<size_t>(sh[1].n)},
                                 {wg, 1, 1});
  const int32_t fn = fnCode(a.fn);
  return std::make_unique<SingleKernelOp>(ctx, slots(), buildProgram(ctx, v, p, f, 1), "act_slices", l,
                                          [fn](KernelArgs& a) { a.i32("fn", fn); });
}

}  // namespace sdspeed
