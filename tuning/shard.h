// Sharding a sweep: `--shard K/N` (1-based) gives shard K the op instances whose
// stable hash (FNV-1a of the instance's text form, runtime/hash.h) is K-1 modulo N.
// The split depends on nothing but the instance itself, so adding a component, a
// family or a shape to the list moves no other instance to another shard, and every
// host computes the same split. Each shard writes its own files, named with
// `.shard-K-of-N` before the extension (results/sweeps/<key>/<op>.shard-2-of-4.csv,
// configs/tuned/<key>.shard-2-of-4.yaml), which `sdspeed db merge` joins
// (tuning/db_merge.h).
#pragma once

#include <string>

namespace sdspeed {

struct Shard {
  int k = 1, n = 1;  // shard k of n, 1 <= k <= n; 1/1 is the unsharded run
  bool sharded() const { return n > 1; }
  // Whether this shard tunes the op instance with this text (OpInstance::text()).
  bool owns(const std::string& instanceText) const;
  // ".shard-K-of-N", or "" when unsharded: inserted before a file's extension.
  std::string suffix() const;
  std::string text() const { return std::to_string(k) + "/" + std::to_string(n); }
};

// "K/N" with 1 <= K <= N; "" is 1/1. Throws Error naming --shard otherwise.
Shard parseShard(const std::string& text);

// The shard an instance text falls to, 1-based (what owns() compares).
int shardOf(const std::string& instanceText, int n);

// "DIR/name.ext" -> "DIR/name.shard-K-of-N.ext" (unchanged when unsharded).
std::string shardPath(const std::string& path, const Shard& shard);

}  // namespace sdspeed
