// The op instance: the key the tuner, its database, bench and the pipeline share.
// It names everything that changes what is computed or how it is stored: the family,
// the main tensor's shape, the op's attributes (canonical NAME=VALUE strings, e.g.
// GroupNorm's g, eps, silu, residual) and the run's StorageFormat (precision,
// storage, layout). Stable text form (configs/tuned/FORMAT.md):
//   FAMILY NxCxHxW NAME=VALUE... DTYPE.STORAGE.LAYOUT[.wDTYPE]
// with attributes sorted by name, e.g.
//   groupnorm 2x320x64x64 eps=1e-05 g=32 residual=0 silu=1 f32.buffer.nchw
//   gemm 2x320x64x64 act=none bias=1 ... f32.buffer.nchw.wf16   (f16 weights)
// The weight part is absent for f32 weights and for families that read no weights
// (Family::keyFormat), so entries written before the weight axis keep their keys, and
// an f16-weight instance never matches an f32-weight entry (sameOpAs compares formats).
#pragma once

#include <map>
#include <string>

#include "kernels/family.h"

namespace sdspeed {

struct OpInstance {
  std::string family;
  Shape shape;
  std::map<std::string, std::string> attrs;
  StorageFormat format;

  std::string text() const;
  // Throws Error naming what is wrong with the text.
  static OpInstance parse(const std::string& text);
  static OpInstance of(const Family& fam, const Problem& prob, const StorageFormat& f);
  // The problem this instance describes (the family validates the attributes).
  ProblemPtr problem(const Family& fam) const { return fam.makeProblem(shape, attrs); }
  // Same family, attributes and format: instances that may share tuned parameters.
  bool sameOpAs(const OpInstance& o) const {
    return family == o.family && attrs == o.attrs && format == o.format;
  }
  bool operator==(const OpInstance& o) const { return sameOpAs(o) && shape == o.shape; }
};

// How far apart two shapes are for the database's nearest-shape fallback: the sum
// over N, C, H, W of |log2(a / b)|, so halving any one dimension costs 1 and the
// distance is symmetric and scale-free.
double shapeDistance(const Shape& a, const Shape& b);

}  // namespace sdspeed
