#!/usr/bin/env bash
# Device visit for the tuner: build sdspeed, run the GroupNorm check, an exhaustive
# GroupNorm sweep at 2x320x64x64 (+SiLU, fp32) on the GPU (the recording that
# tests/test_tuner.cpp replays), and time the target points again. Results
# land in $OUT/tune-h200.tgz (sweep CSV, tuning database, logs) and $OUT/summary.txt.
#   bash scripts/device-tune.sh
set -uo pipefail
OUT=${OUT:-$PWD/out}
W=$(mktemp -d)
export SDSPEED_CACHE_DIR=/tmp/sdspeed-cache
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF >/dev/null &&
  cmake --build build-dev -j16 2>&1 | grep -E 'error|warning' > "$W/build.log"
BIN=build-dev/cli/sdspeed
[ -x $BIN ] || { cat "$W/build.log"; echo "build failed"; exit 1; }
$BIN devices > "$W/devices.txt" 2>&1
GPU=$($BIN devices | awk '/^\* /{print $2}')
run() {  # run LOGNAME sdspeed ARGS...: log the command, its output and exit status
  local log="$W/$1"; shift; shift
  echo "\$ sdspeed $*" > "$log"
  timeout 400 $BIN "$@" >> "$log" 2>&1
  echo "exit status $?" >> "$log"
}
run check.txt sdspeed check --op groupnorm --device $GPU --points 2
run tune.txt sdspeed tune --op groupnorm --device $GPU --shape 2x320x64x64 --attrs g=32,silu=1 \
  --strategy exhaustive --min-ms 10 --llc-mib 60 --threads 16 --seconds 170 --sweep-dir "$W/sweeps" --db-dir "$W/tuned"
B="bench --op groupnorm --device $GPU --attrs g=32,silu=1 --llc-mib 60 --min-ms 200 --warmup 20"
for spec in "2x320x64x64 split CACHE=4,SPLIT=4,VEC=4,WG=512" "2x1280x8x8 split CACHE=2,SPLIT=3,VEC=4,WG=256" \
            "2x1280x8x8 one_pass CACHE=2,VEC=4,WG=512"; do
  set -- $spec
  run best-$2-$1.txt sdspeed $B --shape $1 --variant $2 --params $3
done
{ for f in check.txt tune.txt; do head -1 "$W/$f"; tail -4 "$W/$f"; done; grep -h '^best' "$W"/best-*.txt; } | tee "$W/summary.txt"
cp "$W/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/tune-h200.tgz" -C "$W" .
