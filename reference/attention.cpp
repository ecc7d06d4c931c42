#include "reference/attention.h"

#include <limits>

#include <Eigen/Core>

namespace sdspeed {
namespace {

using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Head h of token tensor t ([B, H*D, tokens], channel-major) as a tokens x D matrix.
Eigen::MatrixXd head(const std::vector<float>& t, const AttentionDims& d, int64_t b, int64_t h, int64_t tokens) {
  Eigen::Map<const RowMajorF> all(t.data() + b * d.heads * d.headDim * tokens, d.heads * d.headDim, tokens);
  return all.middleRows(h * d.headDim, d.headDim).cast<double>().transpose();
}

}  // namespace

std::vector<double> attentionReference(const AttentionDims& d, double scale, bool causal,
                                       const std::vector<float>& q, const std::vector<float>& k,
                                       const std::vector<float>& v, const std::vector<float>& mask) {
  const int64_t S = d.queries, L = d.keys, C = d.heads * d.headDim;
  std::vector<double> out(static_cast<size_t>(d.batch * C * S));
  for (int64_t b = 0; b < d.batch; ++b) {
    Eigen::MatrixXd m = Eigen::MatrixXd::Zero(S, L);
    if (!mask.empty())
      m = Eigen::Map<const RowMajorF>(mask.data() + b * S * L, S, L).cast<double>();
    for (int64_t h = 0; h < d.heads; ++h) {
      Eigen::MatrixXd scores = head(q, d, b, h, S) * head(k, d, b, h, L).transpose() * scale + m;
      if (causal)
        for (int64_t s = 0; s < S; ++s)
          for (int64_t l = s + 1; l < L; ++l) scores(s, l) = -std::numeric_limits<double>::infinity();
      for (int64_t s = 0; s < S; ++s) {
        auto row = scores.row(s);
        row = (row.array() - row.maxCoeff()).exp().matrix();
        row /= row.sum();
      }
      const Eigen::MatrixXd o = scores * head(v, d, b, h, L);  // S x D
      for (int64_t s = 0; s < S; ++s)
        for (int64_t j = 0; j < d.headDim; ++j)
          out[static_cast<size_t>((b * C + h * d.headDim + j) * S + s)] = o(s, j);
    }
  }
  return out;
}

}  // namespace sdspeed
