#include "kernels/registry.h"
#include "pipeline/model/sd_graphs.h"

namespace sdspeed {

Graph buildTextEncoderGraph(const ClipConfig& cfg, int64_t batch, int64_t tokens, const std::string& wp,
                            GraphOptions options) {
  Graph g("text_encoder");
  GraphBuilder b(g, options);
  const int64_t c = cfg.hidden;
  const std::string act = cfg.act == "quick_gelu" ? "quick_gelu" : cfg.act == "gelu" ? "gelu" : "gelu_tanh";
  const int ids = g.addInput("input_ids", {batch, 1, 1, tokens}, false);
  auto emb = findFamily("embedding").makeProblem(
      {batch, c, 1, tokens}, {{"vocab", std::to_string(cfg.vocab)}, {"positions", std::to_string(cfg.positions)}});
  const int tok = g.addWeight(wp + "embeddings.token_embedding.weight", {cfg.vocab, c, 1, 1}, {cfg.vocab, c});
  const int pos = g.addWeight(wp + "embeddings.position_embedding.weight", {cfg.positions, c, 1, 1}, {cfg.positions, c});
  int x = g.add("embedding", emb, {{"ids", ids}, {"tok", tok}, {"pos", pos}}, wp + "embeddings");
  for (int64_t l = 0; l < cfg.layers; ++l) {
    const std::string p = wp + "encoder.layers." + std::to_string(l);
    int h = b.layerNorm(x, p + ".layer_norm1", cfg.eps);
    const int q = b.linear(h, p + ".self_attn.q_proj", c, true);
    const int k = b.linear(h, p + ".self_attn.k_proj", c, true);
    const int v = b.linear(h, p + ".self_attn.v_proj", c, true);
    // CLIP's causal mask is the only one: SD passes no attention_mask.
    const int a = b.attention(q, k, v, cfg.heads, true, p + ".self_attn");
    x = b.linear(a, p + ".self_attn.out_proj", c, true, "none", x);
    h = b.layerNorm(x, p + ".layer_norm2", cfg.eps);
    h = b.linear(h, p + ".mlp.fc1", cfg.intermediate, true, act);
    x = b.linear(h, p + ".mlp.fc2", c, true, "none", x);
  }
  g.markOutput("last_hidden_state", b.layerNorm(x, wp + "final_layer_norm", cfg.eps));
  return g;
}

}  // namespace sdspeed
