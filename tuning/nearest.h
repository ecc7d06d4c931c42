// How far a tuned op instance is from one without an entry, for the tuning database's
// nearest-instance fallback (TuningDatabase::lookup; configs/tuned/FORMAT.md "Lookup and
// fallbacks"). Parameters tuned for a GEMM with n=2560 say more about one with n=1920
// than the device-wide vote does (on the H200 two GEMMs got 25-30% slower when other
// GEMMs were tuned and the vote moved), so the distance crosses sizes, not structure:
//   distance = shapeDistance(N, C, H, W) + sum over the family's size attributes of
//              |log2(a / b)|
// A size attribute is a count that scales the work the way a dimension does (GEMM n,
// conv cout, attention kv and heads, ...); an attribute that changes no work (an eps, a
// scale factor) is not compared; every other attribute (conv k, stride, pad, flags,
// groupnorm g, an activation's fn, ...) and the whole storage format must be equal.
#pragma once

#include <optional>

#include "tuning/op_instance.h"

namespace sdspeed {

// Farther than this, an entry with other size attributes is no better a guess than the
// device vote: 8 is a 256x change in total (e.g. 16x in two dimensions). Every
// leave-one-out pair in the recordings (tests/test_nearest.cpp) lies within 8, so the
// recorded data cannot pick a tighter bound: a smaller one only hands more instances to
// the vote, which lost there. (An entry with identical attributes answers at any
// distance, as before sizes were crossed: TuningDatabase::lookup.)
constexpr double kMaxNearestDistance = 8;

// The distance from `asked` to `tuned`, or nullopt when they may not share parameters
// (another family or storage format, or an attribute that must be equal differs).
std::optional<double> instanceDistance(const OpInstance& asked, const OpInstance& tuned);

}  // namespace sdspeed
