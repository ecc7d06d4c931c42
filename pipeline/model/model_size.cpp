#include "pipeline/model/model_size.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

namespace sdspeed {
namespace {

using real = long double;

// A feature map's size as the builders track it: batch, channels, height, width.
struct Map {
  real n, c, h, w;
  real elements() const { return n * c * h * w; }
};

// The GraphBuilder vocabulary (graph.cpp), counting instead of building.
class Counter {
 public:
  explicit Counter(bool fuse) : fuse_(fuse) {}
  ComponentSize size;

  void input(const Map& m) { act(m); }
  Map conv(const Map& x, real cout, real k, real stride) {
    weight(cout * x.c * k * k);
    weight(cout);
    // Stride 2 with padding 1 and k 3 halves (rounding up), as the family's shapes do.
    const Map y{x.n, cout, stride > 1 ? ceilHalf(x.h) : x.h, stride > 1 ? ceilHalf(x.w) : x.w};
    return op(y);
  }
  Map groupNorm(const Map& x, bool silu) {
    weight(x.c);
    weight(x.c);
    const Map y = op(x);
    return silu && !fuse_ ? op(y) : y;  // the separate SiLU
  }
  Map layerNorm(const Map& x) { return groupNorm(x, false); }
  // epilogue: "none", an activation, or "geglu" (writes rows / 2 channels).
  Map linear(const Map& x, real rows, bool bias, const char* epilogue = "none") {
    weight(rows * x.c);
    if (bias) weight(rows);
    const bool none = std::string_view(epilogue) == "none", geglu = std::string_view(epilogue) == "geglu";
    if (!none && !fuse_) {
      op({x.n, rows, x.h, x.w});  // the GEMM, then the separate activation
      return op({x.n, geglu ? rows / 2 : rows, x.h, x.w});
    }
    return op({x.n, geglu ? rows / 2 : rows, x.h, x.w});
  }
  Map plain(const Map& y) { return op(y); }  // attention, activation, timestep, concat, upsample

 private:
  static real ceilHalf(real v) { return std::floor((v + 1) / 2); }
  void weight(real elements) {
    size.weightElements += elements;
    size.largestWeight = std::max(size.largestWeight, elements);
  }
  void act(const Map& m) { size.largestActivation = std::max(size.largestActivation, m.elements()); }
  Map op(const Map& y) {
    size.nodes += 1;
    act(y);
    return y;
  }
  bool fuse_;
};

// blocks.cpp's resnetBlock: norm1(+SiLU), time_emb_proj, conv1, norm2(+SiLU),
// conv_shortcut when the channels change, conv2.
Map resnet(Counter& b, const Map& x, real cout, real tdim) {
  Map h = b.groupNorm(x, true);
  if (tdim > 0) b.linear({x.n, tdim, 1, 1}, cout, true);
  h = b.conv(h, cout, 3, 1);
  h = b.groupNorm(h, true);
  if (x.c != cout) b.conv(x, cout, 1, 1);
  return b.conv(h, cout, 3, 1);
}

// blocks.cpp's transformer2d on tokens [n, c, 1, h*w] with `layers` BasicTransformerBlocks.
Map transformer(Counter& b, const Map& x, real contextC, real contextTokens, real layers) {
  const real c = x.c;
  const Map t{x.n, c, 1, x.h * x.w}, ctx{x.n, contextC, 1, contextTokens};
  Map h = b.groupNorm(t, false);
  h = b.linear(h, c, true);  // proj_in
  // One block; every block has the same shapes, so the counts scale by `layers`.
  const ComponentSize before = b.size;
  {
    Map n = b.layerNorm(h);
    b.linear(n, c, false), b.linear(n, c, false), b.linear(n, c, false);
    b.plain(t);               // self-attention
    h = b.linear(t, c, true);  // to_out + residual
    n = b.layerNorm(h);
    b.linear(n, c, false), b.linear(ctx, c, false), b.linear(ctx, c, false);
    b.plain(t);               // cross-attention
    h = b.linear(t, c, true);
    n = b.layerNorm(h);
    const Map f = b.linear(n, 8 * c, true, "geglu");
    h = b.linear(f, c, true);  // ff.net.2 + residual
  }
  if (layers != 1) {
    const real k = layers - 1;  // the block counted once above
    b.size.nodes += k * (b.size.nodes - before.nodes);
    b.size.weightElements += k * (b.size.weightElements - before.weightElements);
  }
  b.linear(h, c, true);  // proj_out + the input, viewed back as the map
  return x;
}

}  // namespace

ComponentSize unetSize(const UNetConfig& cfg, int64_t batch, int64_t latentH, int64_t latentW, int64_t contextTokens,
                       bool fuse) {
  Counter b(fuse);
  const real n = static_cast<real>(batch), c0 = static_cast<real>(cfg.blockOut.at(0)), tdim = 4 * c0;
  const real ctxC = static_cast<real>(cfg.crossAttentionDim), ctxL = static_cast<real>(contextTokens);
  const real layers = static_cast<real>(cfg.layersPerBlock), xlayers = static_cast<real>(cfg.transformerLayers);
  b.input({n, static_cast<real>(cfg.inChannels), static_cast<real>(latentH), static_cast<real>(latentW)});
  b.input({n, ctxC, 1, ctxL});
  b.plain({n, c0, 1, 1});                   // time_proj
  b.linear({n, c0, 1, 1}, tdim, true, "silu");  // linear_1
  b.linear({n, tdim, 1, 1}, tdim, true);      // linear_2
  b.plain({n, tdim, 1, 1});                   // act
  // A resnet (+ transformer) repeated `count` times on the same shapes: counted once and
  // scaled, so layers_per_block: 10^9 costs nothing to count.
  auto repeated = [&](Map h, real cout, bool attn, real count) {
    const Map first = resnet(b, h, cout, tdim);
    h = attn ? transformer(b, first, ctxC, ctxL, xlayers) : first;
    if (count > 1) {
      // The later repeats take cout channels in (no shortcut when cin == cout).
      const ComponentSize afterFirst = b.size;
      Map again = resnet(b, h, cout, tdim);
      if (attn) again = transformer(b, again, ctxC, ctxL, xlayers);
      const real k = count - 2;
      b.size.nodes += k * (b.size.nodes - afterFirst.nodes);
      b.size.weightElements += k * (b.size.weightElements - afterFirst.weightElements);
      h = again;
    }
    return h;
  };
  Map h = b.conv({n, static_cast<real>(cfg.inChannels), static_cast<real>(latentH), static_cast<real>(latentW)}, c0, 3, 1);
  std::vector<Map> skips = {h};
  const size_t nb = cfg.blockOut.size();
  for (size_t i = 0; i < nb; ++i) {
    const bool attn = cfg.downTypes[i] == "CrossAttnDownBlock2D";
    const real cout = static_cast<real>(cfg.blockOut[i]);
    // Skips: layers entries of this level's output channels (the first may differ only
    // in the count, not the shape, so one entry stands for all of them below).
    h = repeated(h, cout, attn, layers);
    skips.push_back(h);
    if (i + 1 < nb) {
      h = b.conv(h, h.c, 3, 2);
      skips.push_back(h);
    }
  }
  h = resnet(b, h, static_cast<real>(cfg.blockOut.back()), tdim);
  h = transformer(b, h, ctxC, ctxL, xlayers);
  h = resnet(b, h, static_cast<real>(cfg.blockOut.back()), tdim);
  // The up path pops skips in reverse: per level, one from the downsampler (except the
  // first level), `layers` from the level's resnets, and for up block nb-1 conv_in's.
  for (size_t i = 0; i < nb; ++i) {
    const size_t r = nb - 1 - i;
    const bool attn = cfg.upTypes[i] == "CrossAttnUpBlock2D";
    const real cout = static_cast<real>(cfg.blockOut[r]);
    const real levelC = static_cast<real>(cfg.blockOut[r]);
    // The skips this up block consumes, in order: (layers) of level r's resnet output,
    // then the downsampler's output of level r-1 (channels blockOut[r-1]) or conv_in's.
    const real lowerC = r > 0 ? static_cast<real>(cfg.blockOut[r - 1]) : c0;
    // j = 0 .. layers-1: skip channels levelC, j == layers: lowerC. The input of j = 0 has
    // h.c channels; later ones cout.
    auto step = [&](const Map& in, real skipC) {
      const Map cat = b.plain({in.n, in.c + skipC, in.h, in.w});
      Map y = resnet(b, cat, cout, tdim);
      return attn ? transformer(b, y, ctxC, ctxL, xlayers) : y;
    };
    h = step(h, levelC);
    if (layers > 1) {
      const ComponentSize afterFirst = b.size;
      h = step(h, levelC);
      const real k = layers - 2;
      b.size.nodes += k * (b.size.nodes - afterFirst.nodes);
      b.size.weightElements += k * (b.size.weightElements - afterFirst.weightElements);
    }
    h = step(h, lowerC);
    if (i + 1 < nb) {
      const Map up = b.plain({h.n, h.c, 2 * h.h, 2 * h.w});
      h = b.conv(up, h.c, 3, 1);
    }
  }
  h = b.groupNorm(h, true);
  b.conv(h, static_cast<real>(cfg.outChannels), 3, 1);
  return b.size;
}

ComponentSize vaeDecoderSize(const VaeConfig& cfg, int64_t batch, int64_t latentH, int64_t latentW, bool fuse) {
  Counter b(fuse);
  const real n = static_cast<real>(batch), lc = static_cast<real>(cfg.latentChannels);
  Map h{n, lc, static_cast<real>(latentH), static_cast<real>(latentW)};
  b.input(h);
  if (cfg.usePostQuantConv) h = b.conv(h, lc, 1, 1);
  const real top = static_cast<real>(cfg.blockOut.back());
  h = b.conv(h, top, 3, 1);
  h = resnet(b, h, top, 0);
  if (cfg.midAttention) {
    const Map t{h.n, h.c, 1, h.h * h.w};
    const Map g = b.groupNorm(t, false);
    b.linear(g, h.c, true), b.linear(g, h.c, true), b.linear(g, h.c, true);
    b.plain(t);
    b.linear(t, h.c, true);  // to_out + the input
  }
  h = resnet(b, h, top, 0);
  const real layers = static_cast<real>(cfg.layersPerBlock);
  const size_t nb = cfg.blockOut.size();
  for (size_t i = 0; i < nb; ++i) {
    const real cout = static_cast<real>(cfg.blockOut[nb - 1 - i]);
    h = resnet(b, h, cout, 0);  // j = 0 (may change channels)
    const ComponentSize before = b.size;
    h = resnet(b, h, cout, 0);  // j = 1 .. layers: the same shapes each
    if (layers > 1) {
      b.size.nodes += (layers - 1) * (b.size.nodes - before.nodes);
      b.size.weightElements += (layers - 1) * (b.size.weightElements - before.weightElements);
    }
    if (i + 1 < nb) {
      const Map up = b.plain({h.n, h.c, 2 * h.h, 2 * h.w});
      h = b.conv(up, h.c, 3, 1);
    }
  }
  h = b.groupNorm(h, true);
  b.conv(h, static_cast<real>(cfg.outChannels), 3, 1);
  return b.size;
}

ComponentSize textEncoderSize(const ClipConfig& cfg, int64_t batch, int64_t tokens, bool fuse) {
  Counter b(fuse);
  const real n = static_cast<real>(batch), c = static_cast<real>(cfg.hidden), s = static_cast<real>(tokens);
  const Map x{n, c, 1, s};
  // The embedding tables are weights of the embedding op (token and position rows).
  b.size.weightElements += static_cast<real>(cfg.vocab) * c + static_cast<real>(cfg.positions) * c;
  b.size.largestWeight = std::max(static_cast<real>(cfg.vocab), static_cast<real>(cfg.positions)) * c;
  b.plain(x);
  const ComponentSize before = b.size;
  {
    const Map h = b.layerNorm(x);
    b.linear(h, c, true), b.linear(h, c, true), b.linear(h, c, true);
    b.plain(x);  // attention
    b.linear(x, c, true);  // out_proj + residual
    const Map h2 = b.layerNorm(x);
    const Map f = b.linear(h2, static_cast<real>(cfg.intermediate), true, "gelu");
    b.linear(f, c, true);  // fc2 + residual
  }
  const real layers = static_cast<real>(cfg.layers);
  b.size.nodes += (layers - 1) * (b.size.nodes - before.nodes);
  b.size.weightElements += (layers - 1) * (b.size.weightElements - before.weightElements);
  b.layerNorm(x);
  return b.size;
}

}  // namespace sdspeed
