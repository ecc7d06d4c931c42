#!/usr/bin/env bash
# scripts/cluster/parallel-tune on this host (CTest cluster_parallel, label cluster):
# three shards of a random search under a point budget with a fixed seed, run at once
# by GNU parallel and merged, against one unsharded run: the same measured points
# (instance, variant, params, status) and the same database instances and variants,
# and no shard file left behind. Skips (exit 77) without GNU parallel.
#   tests/test_cluster_parallel.sh SDSPEED_BIN SOURCE_DIR
set -euo pipefail
BIN=$1 SRC=$2
if ! command -v parallel >/dev/null; then
  echo "SKIP: GNU parallel is not installed (scripts/setup-debian installs it)"
  exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/sdspeed-parallel-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ARGS=(--op groupnorm --shapes "$SRC/configs/shapes/tiny.yaml" --strategy random --budget 2 --seed 11 --min-ms 1 --threads 1)

"$BIN" tune "${ARGS[@]}" --sweep-dir "$T/one/sweeps" --db-dir "$T/one/tuned" >"$T/one.log" 2>&1 ||
  { cat "$T/one.log"; fail "the unsharded run failed"; }
SDSPEED=$BIN "$SRC/scripts/cluster/parallel-tune" -n 3 -- "${ARGS[@]}" --sweep-dir "$T/par/sweeps" --db-dir "$T/par/tuned" \
  >"$T/par.log" 2>&1 || { cat "$T/par.log"; fail "parallel-tune failed"; }
cat "$T/par.log"
for k in 1 2 3; do grep -q "^$k	shard $k/3: " "$T/par.log" || fail "no output of shard $k tagged by parallel"; done
one=$(ls "$T"/one/tuned/*.yaml) par=$(ls "$T"/par/tuned/*.yaml)
[[ $(basename "$one") == $(basename "$par") ]] || fail "databases named differently: $one, $par"
"$BIN" db compare "$one" "$par" || fail "the merged database differs from the unsharded one"
"$BIN" db compare --sweeps "$T/one/sweeps" "$T/par/sweeps" || fail "the merged sweeps differ from the unsharded one"
leftover=$(find "$T/par" -name '*.shard-*' | wc -l)
[[ $leftover -eq 0 ]] || fail "$leftover shard files left after the merge"
# The measured points: one row per point, 9 instances x 2 points.
rows=$(($(wc -l <"$(ls "$T"/par/sweeps/*/groupnorm.csv)") - 1))
[[ $rows -eq 18 ]] || fail "want 18 measured points, the merge has $rows"
# A shard missing is refused by the merge, naming the file.
mkdir -p "$T/miss/tuned" "$T/miss/sweeps"
cp "$one" "$T/miss/tuned/$(basename "$one" .yaml).shard-1-of-2.yaml"
if out=$(SDSPEED=$BIN "$SRC/scripts/cluster/merge-shards" --sdspeed "$BIN" 2 "$T/miss/sweeps" "$T/miss/tuned" 2>&1); then
  fail "merge-shards accepted a missing shard"
fi
[[ $out == *"shard-2-of-2.yaml is missing"* ]] || fail "merge-shards said: $out"
echo "PASS: 3 GNU parallel shards merged = the unsharded run (18 points)"
