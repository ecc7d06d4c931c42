// The one harness that checks a family's kernels against its reference: used by
// the GoogleTest suite, `sdspeed check` and (later) the tuner's accuracy gate.
// For one (variant, point, problem, storage format) it uploads fresh random inputs,
// poisons the output with NaN and puts a canary past its end, runs the op, and
// compares with the double reference: every element written, within tolerance,
// NC4HW4 padding lanes written as zero, canary intact.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/family.h"
#include "kernels/lowering.h"
#include "tuning/accuracy.h"
#include "tuning/status.h"

namespace sdspeed {

struct CheckResult {
  std::string family, variant, params, storage, problem;
  Status status = Status::Ok;
  Comparison cmp;
  bool canaryIntact = true;
  size_t badPadding = 0;   // NC4HW4 pad lanes not zero
  size_t scratchBytes = 0; // device memory the variant allocates besides the op's tensors
  // rel L2 of the output against the reference on the weights as drawn, before rounding
  // to the weight format: what f16 weights cost in accuracy. Negative when it equals
  // cmp.relL2 (f32 weights, or a family with no weight slot).
  double relL2VsUnrounded = -1;
  std::string message;     // why it failed / is unsupported
  // FNV-1a of the output's physical bytes (runtime/hash.h) when it ran: the golden-output
  // test (tests/test_golden_outputs.cpp) compares it across changes for bit-identity.
  std::string outputHash;
  // Ran and matched the reference. Unsupported is not a pass: callers say it apart
  // (the harness prints each refused problem; check and tune report the status).
  bool passed() const { return status == Status::Ok; }
};

// The device tensors of one op: one per family slot, the written one with a canary.
class OpTensors {
 public:
  static OpTensors create(Backend& ctx, const Family& fam, const Problem& prob, const StorageFormat& f,
                          bool withCanary);
  // Uploads every read slot.
  void upload(const std::vector<HostTensor>& inputs);
  const std::vector<DeviceTensor*>& args() const { return args_; }
  DeviceTensor& output() { return *tensors_[static_cast<size_t>(out_)]; }

 private:
  std::vector<std::unique_ptr<DeviceTensor>> tensors_;
  std::vector<DeviceTensor*> args_;
  int out_ = -1;
};

// Fresh random inputs for (problem, seed), rounded to what the format stores, and the
// double reference computed from exactly those. The last one is kept: a sweep checks
// many points of one problem, and the reference of a large shape costs more than a
// kernel build.
struct ReferenceData {
  std::vector<HostTensor> inputs;
  std::vector<double> ref;
  // The reference on the unrounded weights (activations rounded as in `ref`); empty
  // when the weight format rounds nothing (f32 weights, no weight slot).
  std::vector<double> refUnroundedWeights;
};
std::shared_ptr<const ReferenceData> referenceData(const Family& fam, const Problem& prob, const StorageFormat& f,
                                                   uint64_t seed);

// Compares an output's physical bytes with the reference; sets status and message.
void judge(CheckResult& r, const Tolerance& tol, const TensorDesc& desc, const std::vector<uint8_t>& bytes,
           const std::vector<double>& ref);
std::string describeFailure(const CheckResult& r, const Tolerance& t);

// Runs the op twice (output poisoned before each launch) and judges the second output.
// derivedWeightsPerCall: an op that derives weights makes them at every call into its
// own scratch (PreparedOp::setDerivedWeightsPerCall), as a memory budget would have it.
CheckResult checkCase(Backend& ctx, const Family& fam, const VariantDef& v, const ParamPoint& p,
                      const Problem& prob, const StorageFormat& f, uint64_t seed, bool derivedWeightsPerCall = false);

// The points `check` runs for a variant: the defaults (fitted to prob when given:
// VariantDef::defaultsFor), then `extra` more drawn deterministically (from seed) from
// the constrained space, skipping any the device cannot run.
std::vector<ParamPoint> samplePoints(const VariantDef& v, const DeviceCaps& dev, int extra,
                                     uint64_t seed, const Problem* prob = nullptr);

// The capability part of an unsupported reason ("device lacks cl_khr_fp16", "device
// lacks image support (...)"; first line only), or "" when the reason is something
// else (a constraint, a size limit), or "family X has no vulkan kernels" for a family (or a
// variant) the backend cannot lower. `check` prints one "skipped: ..." line for each.
std::string lackedCapability(const std::string& reason);

}  // namespace sdspeed
