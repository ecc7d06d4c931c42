// Shared pieces of the small elementwise families (binary, upsample, concat, reshape,
// embedding, timestep): a problem that is a shape plus canonical NAME=VALUE
// attributes, a strict attribute reader (one Error naming an unknown or bad
// attribute), the slice launch grid and random non-zero inputs.
#pragma once

#include <initializer_list>
#include <random>
#include <set>

#include "kernels/family.h"

namespace sdspeed {

// A problem of one of these families: its main tensor's shape and the attributes in
// canonical text, so text(), attributes() and makeProblem round-trip.
struct ShapeAttrProblem : Problem {
  std::string family;
  Shape dims;
  std::map<std::string, std::string> attrs;
  std::string text() const override;  // "concat 2x5x3x5 c2=3"
  Shape shape() const override { return dims; }
  std::map<std::string, std::string> attributes() const override { return attrs; }
};

// The ShapeAttrProblem of `family`, or an Error if p belongs to another family.
const ShapeAttrProblem& asShapeAttr(const Problem& p, const std::string& family);

// Reads NAME=VALUE attributes of one family; the constructor throws Error for a name
// not in `known`, each getter for a value that does not parse or is out of range.
class AttrReader {
 public:
  AttrReader(std::string family, const std::map<std::string, std::string>& attrs,
             std::initializer_list<const char*> known);
  int64_t getInt(const std::string& name, int64_t def, int64_t lo, int64_t hi) const;
  double getDouble(const std::string& name, double def, double lo, double hi) const;
  std::string getChoice(const std::string& name, const std::string& def,
                        std::initializer_list<const char*> choices) const;

 private:
  std::string family_;
  const std::map<std::string, std::string>& attrs_;
};

// Canonical text of a double attribute: the shortest form that reads back exactly.
std::string attrText(double v);

// The grid of a kernel with a work-item per (ITEMS positions, output slice, sample):
// (roundup(ceil(HW / items), wg), slices, N), local (wg, 1, 1).
Launch sliceLaunch(const Shape& out, size_t wg, size_t items);

// The `slices` variant most of these families declare: a work-item per (sample,
// output slice, ITEMS positions), the positions strided by the grid width so that
// neighbouring work-items touch neighbouring positions (coalesced on GPUs).
VariantDef slicesVariant(const std::string& summary);

// The common part of these families: name, source <name>/<name>.cl, variants,
// random non-zero inputs in every read slot, and a one-kernel launch.
class ElementwiseFamily : public Family {
 public:
  std::string name() const override { return name_; }
  std::string sourcePath() const override { return name_ + "/" + name_ + ".cl"; }
  const std::vector<VariantDef>& variants() const override { return variants_; }
  std::vector<HostTensor> makeInputs(const Problem& p, std::mt19937_64& rng) const override;

 protected:
  ElementwiseFamily(std::string name, std::vector<VariantDef> variants)
      : name_(std::move(name)), variants_(std::move(variants)) {}
  const ShapeAttrProblem& get(const Problem& p) const { return asShapeAttr(p, name_); }
  ProblemPtr make(const Shape& s, std::map<std::string, std::string> attrs) const;
  // The kernel <name>_<variant> on launch l: the slots' tensors, then `scalars`.
  std::unique_ptr<PreparedOp> oneKernel(Context& ctx, const VariantDef& v, const ParamPoint& p,
                                        const StorageFormat& f, Launch l,
                                        SingleKernelOp::ScalarArgs scalars = nullptr) const;

  std::string name_;
  std::vector<VariantDef> variants_;
};

// n values with |v| in [0.25, 4] and a random sign: never zero, so an element that is
// not written (or written as zero) cannot pass for a correct one.
std::vector<float> randomNonZero(std::mt19937_64& rng, size_t n);

}  // namespace sdspeed
