#include "reference/elementwise.h"

#include <Eigen/Core>
#include <cmath>
#include <sstream>

#include "runtime/error.h"

namespace sdspeed {
namespace {

using RowMajor = Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// x as a (rows x cols) row-major double array.
RowMajor rows(const std::vector<float>& x, int64_t r, int64_t c) {
  if (static_cast<int64_t>(x.size()) != r * c)
    throw Error("reference: " + std::to_string(x.size()) + " values for a " + std::to_string(r) + "x" +
                std::to_string(c) + " array");
  return Eigen::Map<const Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(x.data(), r, c)
      .cast<double>();
}

std::vector<double> flat(const RowMajor& a) { return {a.data(), a.data() + a.size()}; }

}  // namespace

std::vector<double> binaryReference(const Shape& as, const Shape& bs, const std::string& fn,
                                    const std::vector<float>& a, const std::vector<float>& b) {
  const bool bcast = bs == Shape{as.n, as.c, 1, 1} && !(bs == as);
  if (!bcast && !(bs == as)) throw Error("binary: b " + bs.text() + " is neither a's shape nor [N, C, 1, 1]");
  // One row per (n, c): b's row is either its own row or its single value, repeated.
  const RowMajor A = rows(a, as.n * as.c, as.hw());
  const RowMajor B = bcast ? RowMajor(rows(b, as.n * as.c, 1).replicate(1, as.hw())) : rows(b, as.n * as.c, as.hw());
  if (fn == "add") return flat(A + B);
  if (fn == "mul") return flat(A * B);
  throw Error("binary: unknown fn '" + fn + "' (known: add, mul)");
}

std::vector<double> upsampleReference(const Shape& s, int f, const std::vector<float>& x) {
  const RowMajor X = rows(x, s.n * s.c, s.hw());
  const int64_t H = s.h * f, W = s.w * f;
  RowMajor Y(X.rows(), H * W);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t w = 0; w < W; ++w) Y.col(h * W + w) = X.col((h / f) * s.w + w / f);
  return flat(Y);
}

std::vector<double> concatReference(const Shape& as, const Shape& bs, const std::vector<float>& a,
                                    const std::vector<float>& b) {
  if (as.n != bs.n || as.h != bs.h || as.w != bs.w)
    throw Error("concat: a " + as.text() + " and b " + bs.text() + " differ outside C");
  // Per sample, a's C*HW values then b's.
  const RowMajor A = rows(a, as.n, as.c * as.hw()), B = rows(b, bs.n, bs.c * bs.hw());
  RowMajor Y(as.n, A.cols() + B.cols());
  Y << A, B;
  return flat(Y);
}

void checkTokenIds(const std::vector<float>& ids, int64_t vocab) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (!(ids[i] >= 0 && ids[i] < static_cast<float>(vocab)) || ids[i] != std::floor(ids[i])) {
      std::ostringstream m;
      m << "embedding: token id " << ids[i] << " at index " << i << " is not an integer in [0, " << vocab << ")";
      throw Error(m.str());
    }
}

std::vector<double> embeddingReference(const Shape& y, int64_t vocab, const std::vector<float>& ids,
                                       const std::vector<float>& tok, const std::vector<float>& pos) {
  checkTokenIds(ids, vocab);
  const int64_t S = y.w, C = y.c;
  const RowMajor T = rows(tok, vocab, C), P = rows(pos, static_cast<int64_t>(pos.size()) / C, C);
  if (P.rows() < S) throw Error("embedding: " + std::to_string(P.rows()) + " positions for " + std::to_string(S) + " tokens");
  RowMajor Y(y.n * C, S);  // NCHW: row (b, c), column s
  for (int64_t b = 0; b < y.n; ++b)
    for (int64_t s = 0; s < S; ++s)
      Y.block(b * C, s, C, 1) = (T.row(static_cast<int64_t>(ids[b * S + s])) + P.row(s)).transpose();
  return flat(Y);
}

std::vector<double> timestepReference(const std::vector<float>& t, int64_t dim, bool flip, double shift,
                                      double maxPeriod) {
  const int64_t half = dim / 2;
  if (half < 1 || !(half - shift > 0)) throw Error("timestep: needs dim >= 2 and dim / 2 > freq_shift");
  const Eigen::ArrayXd j = Eigen::ArrayXd::LinSpaced(half, 0, static_cast<double>(half - 1));
  const Eigen::ArrayXd freq = (-std::log(maxPeriod) * j / (static_cast<double>(half) - shift)).exp();
  RowMajor Y = RowMajor::Zero(static_cast<int64_t>(t.size()), dim);
  for (int64_t b = 0; b < Y.rows(); ++b) {
    const Eigen::ArrayXd arg = static_cast<double>(t[b]) * freq;
    const Eigen::ArrayXd s = arg.sin(), c = arg.cos();
    Y.row(b).segment(0, half) = (flip ? c : s).transpose();
    Y.row(b).segment(half, half) = (flip ? s : c).transpose();
  }
  return flat(Y);
}

}  // namespace sdspeed
