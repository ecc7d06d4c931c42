#include "pipeline/model/blocks.h"

#include "runtime/opencl/cl_error.h"

namespace sdspeed {

int resnetBlock(GraphBuilder& b, int x, const std::string& prefix, int64_t cout, int64_t groups, double eps,
                int tembAct) {
  int h = b.groupNorm(x, prefix + ".norm1", groups, eps, true);
  const int tp = tembAct >= 0 ? b.linear(tembAct, prefix + ".time_emb_proj", cout, true) : -1;
  h = b.conv(h, prefix + ".conv1", cout, 3, 1, 1, tp);
  h = b.groupNorm(h, prefix + ".norm2", groups, eps, true);
  const int shortcut = b.shape(x).c != cout ? b.conv(x, prefix + ".conv_shortcut", cout, 1, 1, 0) : x;
  return b.conv(h, prefix + ".conv2", cout, 3, 1, 1, -1, shortcut);
}

namespace {

// q, k, v projections and the attention of one Attention module; k/v from `kv`.
int attend(GraphBuilder& b, int x, int kv, const std::string& prefix, int64_t heads, bool qkvBias) {
  const int64_t c = b.shape(x).c;
  const int q = b.linear(x, prefix + ".to_q", c, qkvBias);
  const int k = b.linear(kv, prefix + ".to_k", c, qkvBias);
  const int v = b.linear(kv, prefix + ".to_v", c, qkvBias);
  return b.attention(q, k, v, heads, false, prefix);
}

}  // namespace

int transformer2d(GraphBuilder& b, int x, const std::string& prefix, int64_t heads, int64_t groups, int context,
                  bool useLinearProjection, int64_t layers) {
  const Shape s = b.shape(x);
  const int64_t c = s.c;
  if (c % heads) throw Error(prefix + ": " + std::to_string(c) + " channels do not split into " + std::to_string(heads) + " heads");
  const std::vector<int64_t> projDisk = useLinearProjection ? std::vector<int64_t>{c, c} : std::vector<int64_t>{c, c, 1, 1};
  const int tokens = b.toTokens(x);
  int h = b.groupNorm(tokens, prefix + ".norm", groups, 1e-6, false);
  h = b.linear(h, prefix + ".proj_in", c, true, "none", -1, projDisk);
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = prefix + ".transformer_blocks." + std::to_string(l);
    int n = b.layerNorm(h, p + ".norm1", 1e-5);
    h = b.linear(attend(b, n, n, p + ".attn1", heads, false), p + ".attn1.to_out.0", c, true, "none", h);
    n = b.layerNorm(h, p + ".norm2", 1e-5);
    h = b.linear(attend(b, n, context, p + ".attn2", heads, false), p + ".attn2.to_out.0", c, true, "none", h);
    n = b.layerNorm(h, p + ".norm3", 1e-5);
    const int f = b.linear(n, p + ".ff.net.0.proj", 8 * c, true, "geglu");  // GEGLU: 2 x (4 * dim)
    h = b.linear(f, p + ".ff.net.2", c, true, "none", h);
  }
  const int out = b.linear(h, prefix + ".proj_out", c, true, "none", tokens, projDisk);
  return b.toMap(out, s.h, s.w);
}

int vaeAttention(GraphBuilder& b, int x, const std::string& prefix, int64_t groups) {
  const Shape s = b.shape(x);
  const int tokens = b.toTokens(x);
  const int n = b.groupNorm(tokens, prefix + ".group_norm", groups, 1e-6, false);
  const int a = attend(b, n, n, prefix, 1, true);
  const int out = b.linear(a, prefix + ".to_out.0", s.c, true, "none", tokens);
  return b.toMap(out, s.h, s.w);
}

int downsample(GraphBuilder& b, int x, const std::string& prefix) {
  return b.conv(x, prefix + ".conv", b.shape(x).c, 3, 2, 1);
}

int upsample(GraphBuilder& b, int x, const std::string& prefix) {
  const int u = b.upsample2x(x, prefix + ".interpolate");
  return b.conv(u, prefix + ".conv", b.shape(x).c, 3, 1, 1);
}

}  // namespace sdspeed
