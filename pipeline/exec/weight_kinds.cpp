#include "pipeline/exec/weight_kinds.h"

#include "kernels/family.h"

namespace sdspeed {
namespace {

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool endsWithAny(const std::string& s, std::initializer_list<const char*> tails) {
  for (const char* t : tails)
    if (endsWith(s, t)) return true;
  return false;
}

}  // namespace

const std::vector<std::string>& weightKinds() {
  static const std::vector<std::string> k{"conv", "attn", "ff", "proj", "time_embed"};
  return k;
}

std::string nodeWeightKind(const GraphNode& n) {
  const std::string& fam = n.family->name();
  if (fam == "conv") return "conv";
  if (fam != "gemm") return "";
  const std::string& l = n.label;
  if (endsWithAny(l, {".to_q", ".to_k", ".to_v", ".to_out.0", ".q_proj", ".k_proj", ".v_proj", ".out_proj"}))
    return "attn";
  if (endsWithAny(l, {".ff.net.0.proj", ".ff.net.2", ".mlp.fc1", ".mlp.fc2"})) return "ff";
  if (endsWithAny(l, {".proj_in", ".proj_out"})) return "proj";
  if (endsWithAny(l, {"time_embedding.linear_1", "time_embedding.linear_2", ".time_emb_proj"})) return "time_embed";
  throw Error(n.label + ": a Linear of no known layer kind (pipeline/exec/weight_kinds.cpp): --weights KIND=FORMAT "
              "could not reach it");
}

}  // namespace sdspeed
