#include "tuning/shard.h"

#include "runtime/error.h"
#include "runtime/hash.h"

namespace sdspeed {

int shardOf(const std::string& instanceText, int n) {
  // FNV-1a's low bits are weak for short, similar texts (shapes differing in one
  // digit): a splitmix64 finalizer spreads every input bit over the result.
  uint64_t h = Fnv1a().add(instanceText).value();
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return static_cast<int>(h % static_cast<uint64_t>(n)) + 1;
}

bool Shard::owns(const std::string& instanceText) const { return n <= 1 || shardOf(instanceText, n) == k; }

std::string Shard::suffix() const {
  return sharded() ? ".shard-" + std::to_string(k) + "-of-" + std::to_string(n) : "";
}

Shard parseShard(const std::string& text) {
  if (text.empty()) return {};
  const auto bad = [&] { return Error("--shard wants K/N with 1 <= K <= N (1-based), got '" + text + "'"); };
  const size_t slash = text.find('/');
  if (slash == std::string::npos) throw bad();
  Shard s;
  try {
    size_t used = 0;
    s.k = std::stoi(text.substr(0, slash), &used);
    if (used != slash) throw bad();
    s.n = std::stoi(text.substr(slash + 1), &used);
    if (used != text.size() - slash - 1) throw bad();
  } catch (const std::exception&) {
    throw bad();
  }
  if (s.n < 1 || s.k < 1 || s.k > s.n || s.n > 4096) throw bad();
  return s;
}

std::string shardPath(const std::string& path, const Shard& shard) {
  if (!shard.sharded()) return path;
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + shard.suffix();
  return path.substr(0, dot) + shard.suffix() + path.substr(dot);
}

}  // namespace sdspeed
