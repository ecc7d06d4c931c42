// A kernel family declared as data (after CLBlast's tuner): named variants, each
// with named integer parameters and their value lists, constraints as predicates
// over named parameters, and rules for work-group size and local memory that are
// checked against the device. Parameters become #defines in the family's one
// kernel source; shapes and op attributes are kernel arguments, so one program
// serves every shape.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernel_args.h"
#include "kernels/launch.h"
#include "runtime/opencl/cl_error.h"
#include "runtime/opencl/context.h"
#include "runtime/opencl/bound_kernel.h"
#include "runtime/opencl/tensor.h"
#include "runtime/opencl/tensor_access.h"

namespace sdspeed {

struct ParamDef {
  std::string name;         // also the #define name, e.g. "WG"
  std::vector<int> values;  // the first value is the default
  std::string help;
};

// Values for every parameter of one variant.
class ParamPoint {
 public:
  ParamPoint() = default;
  explicit ParamPoint(std::map<std::string, int> values) : values_(std::move(values)) {}
  int operator[](const std::string& name) const;  // throws Error on an unknown name
  const std::map<std::string, int>& values() const { return values_; }
  std::string text() const;  // "VEC=4,WG=256" (sorted, stable)
  bool operator==(const ParamPoint&) const = default;

 private:
  std::map<std::string, int> values_;
};

struct Constraint {
  std::string description;  // shown when a point violates it, e.g. "VEC*CACHE <= 64"
  std::function<bool(const ParamPoint&)> holds;
};

struct Problem;  // below: an op instance's problem

struct VariantDef {
  std::string name;  // e.g. "one_pass"
  std::string summary;
  std::vector<ParamDef> params;
  std::vector<Constraint> constraints;
  // Fixed #defines of the variant (not tuned), e.g. {"COOP", 1} selecting its kernels.
  std::map<std::string, int> defines;
  // Largest work-group the point launches, and local memory per work-group.
  std::function<size_t(const ParamPoint&)> workGroupSize;
  std::function<size_t(const ParamPoint&)> localMemBytes;
  // Optional: a reason this device cannot run the point at all (empty = fine).
  std::function<std::string(const ParamPoint&, const DeviceCaps&)> deviceRule;
  // Device capabilities the variant's kernels use beyond core OpenCL C, e.g.
  // "cl_khr_fp16" (half arithmetic) or "cl_khr_subgroups" (the Adreno paths). A device
  // without one makes every point unsupported with "device lacks <name>", which
  // `sdspeed check` sums up as a visible "skipped: device lacks <name>" line.
  std::vector<std::string> requiredExtensions;
  // What the variant's kernels compute in (StorageFormat::arithmetic): f32 for the
  // OpenCL variants, which also accumulate in f32 whatever the storage; {f16} for their
  // half twins (kernels/common/half_variant.h: <name>_f16). A format asking for an
  // arithmetic not listed here makes every point unsupported, said as "computes in f32
  // only" (or "f16 only"): never run in one precision under the other's label.
  std::vector<DType> arithmetic{DType::F32};
  // The family's preference among its variants when no tuning-database entry answers
  // (defaultOrder): higher first, ties in declaration order. The executor runs the first
  // in that order that can run the op instance here (device rule, arithmetic, backend's
  // kernels, problem), so an untuned `run --arithmetic f16` reaches GEMM's tensor cores
  // where the device has them. A half twin (halfVariant) inherits its base's rank.
  int defaultRank = 0;

  // Optional launch-geometry rule: values that replace declared defaults for one problem
  // (conv coopmat_f16's split-K, sized so that a small-spatial convolution still fills a
  // GPU). defaultsFor() applies it wherever the defaults stand in for a tuned point: the
  // database's generic default, the executor's fallback, the tuner's baseline and its
  // anneal / model walks' starting points, bench's default point; refitForInstance (tuning/database.h) applies it to a point
  // taken from another instance. Never to an exact entry or a given --params point.
  std::function<std::map<std::string, int>(const ParamPoint& defaults, const Problem&)> fitDefaults;

  const ParamDef* param(const std::string& name) const;
  ParamPoint defaults() const;
  // base with fitDefaults' values for prob (base's tiles decide them); base itself when
  // there is no rule, or the rule gives a value outside a parameter's list or breaks a
  // constraint (a rule must never make a point that cannot run).
  ParamPoint fitPoint(const ParamPoint& base, const Problem& prob) const;
  ParamPoint defaultsFor(const Problem& prob) const { return fitPoint(defaults(), prob); }
  // Every point of the Cartesian product that satisfies the constraints.
  std::vector<ParamPoint> space() const;
  // Parses "WG=256,VEC=4" over the defaults; throws Error for an unknown parameter,
  // a value outside its list, or a point violating a constraint (naming it).
  ParamPoint parsePoint(const std::string& text) const;
  // Empty if the point satisfies every constraint, else the first violated one.
  std::string violatedConstraint(const ParamPoint& p) const;
  // Empty if the device can run the point (extensions, work-group size, local memory).
  std::string deviceLimitReason(const ParamPoint& p, const DeviceCaps& dev) const;
};

// A tensor the op reads or writes. Activations use the run's StorageFormat;
// parameters (weights, biases, norm affine, embedding tables) are NCHW buffers in the
// run's weight format (StorageFormat::params()); host inputs (token ids, timesteps,
// masks: hostInput) are f32 NCHW buffers always.
struct TensorSlot {
  std::string name;
  Access access;
  bool activation;
  bool hostInput = false;
  // A matrix weight the family's kernels read in the quantized formats (int8/int4 blocks
  // along each output channel's reduction: kernels/QUANTIZATION.md). Other parameter
  // slots hold f16 under a quantized weight format.
  bool quantizable = false;
  // True for a parameter slot, whose precision the weight format sets.
  bool weight() const { return !activation && !hostInput; }
};

// The format slot `s` is stored in when the run's format is `f`.
inline StorageFormat slotFormat(const TensorSlot& s, const StorageFormat& f) {
  if (s.activation) return f;
  if (s.hostInput) return StorageFormat{};
  StorageFormat p = f.params();
  if (isQuantized(p.dtype) && !s.quantizable) p.dtype = DType::F16;  // biases, affine, tables
  return p;
}

// Host data for one tensor of an op, logical NCHW.
struct HostTensor {
  Shape shape;
  std::vector<float> data;
};

// Per op and precision: an element passes if |out - ref| <= atol + rtol * |ref|,
// and the whole output must have ||out - ref|| / ||ref|| <= relL2.
struct Tolerance {
  double atol = 0, rtol = 0, relL2 = 0;
};

// One problem of a family: the op's attributes and shape, with a stable text form.
struct Problem {
  virtual ~Problem() = default;
  virtual std::string text() const = 0;
  // The op instance's key parts (tuning/op_instance.h): the main tensor's shape and
  // the attributes that change the computation, canonical NAME=VALUE strings that
  // Family::makeProblem accepts back.
  virtual Shape shape() const = 0;
  virtual std::map<std::string, std::string> attributes() const = 0;
};
using ProblemPtr = std::shared_ptr<const Problem>;

// An op's scratch: the regions it needs only while it runs (Winograd tiles, im2col
// columns, attention scores, split-reduction partials). Whoever runs the op may place
// them (bind: the executor puts them in its activation arena, alive for that op
// alone); an op nobody binds allocates its own buffers on first use (check, bench,
// tune), so a standalone op behaves as before.
class OpScratch {
 public:
  void setSizes(std::vector<uint64_t> bytes);  // drops any binding and own buffers
  const std::vector<uint64_t>& sizes() const { return sizes_; }
  uint64_t total() const;
  // One region per size, in order; throws Error on a count or size mismatch.
  void bind(const std::vector<BufferRegion>& regions);
  BufferRegion at(Context& ctx, size_t index);  // the bound region, else an own buffer

 private:
  std::vector<uint64_t> sizes_;
  std::vector<BufferRegion> bound_;
  std::vector<ClMem> own_;
};

// A family with its program built for one (variant, point, format): binds tensors
// and enqueues the op's kernels, returning one event per kernel.
class PreparedOp {
 public:
  virtual ~PreparedOp() = default;
  // tensors: in the order of Family::slots(); the written ones are outputs.
  virtual OpEvents enqueue(const std::vector<DeviceTensor*>& tensors) = 0;
  // The op's scratch regions (bytes each) and their placement (see OpScratch); call
  // bindScratch before the first enqueue, after any setDerivedWeightsPerCall.
  virtual std::vector<uint64_t> scratchRegions() const { return {}; }
  virtual void bindScratch(const std::vector<BufferRegion>& regions) {
    if (!regions.empty()) throw Error("this op has no scratch to bind");
  }
  size_t scratchBytes() const;  // the sum of scratchRegions()
  // Weights in another layout that the op derives from its weight tensor (Winograd's
  // transformed weights, packed GEMM weights). Resident (default): made on the first
  // call and kept, derivedWeightBytes() per weight tensor. Per call: made into a
  // scratch region at every call (fewer bytes held, a transform kernel per call).
  virtual uint64_t derivedWeightBytes() const { return 0; }
  virtual void setDerivedWeightsPerCall(bool perCall) {
    if (perCall) throw Error("this op derives no weights");
  }
  virtual bool derivedWeightsPerCall() const { return false; }
};

// An op that is one kernel launch: every slot's tensor is bound under the slot's name,
// then the scalars `scalars(args)` adds (shapes come from the tensors; attributes such as
// eps are the scalars), all by name (kernels/kernel_args.h).
class SingleKernelOp : public PreparedOp {
 public:
  using ScalarArgs = std::function<void(KernelArgs&)>;
  SingleKernelOp(Context& ctx, std::vector<TensorSlot> slots, const ClBuiltProgram& program,
                 const std::string& kernelName, Launch launch, ScalarArgs scalars);
  OpEvents enqueue(const std::vector<DeviceTensor*>& tensors) override;

 private:
  std::vector<TensorSlot> slots_;
  ClBoundKernel kernel_;
  Launch launch_;
  ScalarArgs scalars_;
};

class Family {
 public:
  virtual ~Family() = default;
  virtual std::string name() const = 0;
  virtual std::string sourcePath() const = 0;  // under kernels/, e.g. "groupnorm/groupnorm.cl"
  virtual const std::vector<VariantDef>& variants() const = 0;
  virtual std::vector<TensorSlot> slots() const = 0;

  // Problems for checking: quick (CI) or full (adds the big shapes).
  virtual std::vector<ProblemPtr> checkProblems(bool full) const = 0;
  // Shapes of every slot for a problem (same order as slots()).
  virtual std::vector<Shape> shapes(const Problem& p) const = 0;
  // Fresh random inputs for every read slot (written slots get empty data).
  virtual std::vector<HostTensor> makeInputs(const Problem& p, std::mt19937_64& rng) const = 0;
  // The ground truth in double for the written slot, from the (storage-rounded) inputs.
  virtual std::vector<double> reference(const Problem& p, const std::vector<HostTensor>& in) const = 0;
  virtual Tolerance tolerance(DType dtype) const = 0;
  // A variant's own tolerance, where variants differ in accuracy by design (conv's
  // Winograd tiles); the check and the timed re-check use this one.
  virtual Tolerance tolerance(const VariantDef& v, DType dtype) const {
    (void)v;
    return tolerance(dtype);
  }
  // A problem from the command line: a shape and NAME=VALUE attributes; throws Error
  // naming an unknown or bad attribute.
  virtual ProblemPtr makeProblem(const Shape& shape,
                                 const std::map<std::string, std::string>& attrs) const = 0;
  // The fewest bytes the op must move (each input read once, output written once),
  // for GB/s: counted from the op's definition, not from what a variant does.
  virtual size_t minBytes(const Problem& p, const StorageFormat& f) const;
  // The FLOPs the op's definition requires (what it must compute, not what a variant
  // does), for FLOP/s and the fraction of the device's FMA ceiling; 0 = not counted.
  // Convention for every family: add, subtract, multiply, divide, compare (max) and
  // each transcendental (exp, erf, tanh, sqrt/rsqrt) count 1 FLOP, an FMA 2; constants
  // folded at compile time count 0. Each family documents its per-element count.
  virtual double minFlops(const Problem& p) const;

  // Empty if the variant handles this problem in this format on this device, else why
  // not (constraints and device limits included).
  virtual std::string unsupportedReason(const VariantDef& v, const ParamPoint& p, const Problem& prob,
                                        const StorageFormat& f, const DeviceCaps& dev) const;
  // Builds (or fetches from the cache) the program and creates the kernels.
  virtual std::unique_ptr<PreparedOp> prepare(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                              const Problem& prob, const StorageFormat& f) const = 0;

  const VariantDef& variant(const std::string& name) const;  // throws Error if unknown
  // True when some slot is a parameter (TensorSlot::weight()): only then does the
  // weight format change what the op reads.
  bool readsWeights() const;
  // True when some slot is quantizable (the family has an int8/int4 kernel path).
  bool readsQuantizedWeights() const;
  // `f`, with f32 weights when the family reads none: f16 weights change nothing for it,
  // so its op instances, database entries and programs stay those of f32 weights. A
  // quantized weight format on a family with no quantized path is f16 weights: what it
  // then runs (kernels/QUANTIZATION.md), visibly (check/bench/tune say so).
  StorageFormat keyFormat(const StorageFormat& f) const {
    if (!readsWeights()) return f.withWeights(DType::F32);
    if (isQuantized(f.weights) && !readsQuantizedWeights()) return f.withWeights(DType::F16);
    return f;
  }
  // Why keyFormat(f) differs from f, one line ("" when it does not).
  std::string keyFormatNote(const StorageFormat& f) const;
  // The kernel source this family is built from (overridable for tests).
  virtual std::string sourceText(const Context& ctx) const;
  // Full program text: prelude, parameter #defines, tensor accessors, family source.
  std::string programSource(const Context& ctx, const VariantDef& v, const ParamPoint& p,
                            const StorageFormat& f, int vec) const;
  // Builds (only) the program a point will use, so a tuner can compile ahead in
  // parallel threads. The default assumes the program's VEC is the point's VEC.
  virtual void prebuild(Context& ctx, const VariantDef& v, const ParamPoint& p, const StorageFormat& f) const;
  // Builds the program for a point; label names it in errors and dumps.
  ClBuiltProgram buildProgram(Context& ctx, const VariantDef& v, const ParamPoint& p,
                          const StorageFormat& f, int vec) const;
};

// Every program is built with these options: no fast-math, since accuracy is what
// the harness checks and the references assume IEEE float.
inline constexpr const char* kBuildOptions = "-cl-std=CL1.2";

// Whether some variant of the family computes in `arithmetic` (f16: a half twin).
bool familyComputesIn(const Family& fam, DType arithmetic);

// The family's variants by VariantDef::defaultRank, highest first, ties in declaration
// order (all ranks 0: the declaration order, the rule before ranks existed).
std::vector<const VariantDef*> defaultOrder(const Family& fam);

}  // namespace sdspeed
