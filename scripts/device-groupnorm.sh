#!/usr/bin/env bash
# One device visit: configure and build sdspeed, list devices, run the GroupNorm
# accuracy check on the GPU and time the GroupNorm variants at the target
# shapes (2x320x64x64 and 2x1280x8x8, fused SiLU, fp32, NCHW buffers). Logs and CSVs
# land in $OUT/groupnorm-h200.tgz, a summary in $OUT/summary.txt.
#   bash scripts/device-groupnorm.sh [quick|full] [POINTS]
# POINTS: how many sampled points per variant to time (default: all).
set -uo pipefail
OUT=${OUT:-$PWD/out}
MODE=${1:-quick}
POINTS=${2:-all}
W=$(mktemp -d)
export SDSPEED_CACHE_DIR=/tmp/sdspeed-cache
{
  echo "== host"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1
  echo "== build"
  cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF >/dev/null &&
    cmake --build build-dev -j16 2>&1 | grep -E 'error|warning'; true
} > "$W/build.log" 2>&1
BIN=build-dev/cli/sdspeed
[ -x $BIN ] || { cat "$W/build.log"; echo "build failed"; exit 1; }
$BIN devices > "$W/devices.txt" 2>&1
GPU=$($BIN devices | awk '/^\* /{print $2}')
CHECK_ARGS="--op groupnorm --device $GPU --points 2"
[ "$MODE" = full ] && CHECK_ARGS="$CHECK_ARGS --full"
echo "\$ sdspeed check $CHECK_ARGS" > "$W/check.txt"
( time $BIN check $CHECK_ARGS --csv "$W/check.csv" ) >> "$W/check.txt" 2>&1
echo "check exit status $?" >> "$W/check.txt"
{
  grep -E '^device' "$W/check.txt"; tail -4 "$W/check.txt"
  # The H200's L2 is 60 MB; NVIDIA's OpenCL reports 4224 KiB, so rotate past 60 MiB.
  for shape in 2x320x64x64 2x1280x8x8; do
    for v in one_pass split two_pass; do
      pts=$POINTS; [ $v = two_pass ] && pts=40
      cmd="sdspeed bench --op groupnorm --device $GPU --shape $shape --attrs g=32,silu=1 --variant $v --points $pts --min-ms 20 --llc-mib 60"
      echo "\$ $cmd" > "$W/bench-$v-$shape.txt"
      $BIN ${cmd#sdspeed } --csv "$W/bench-$v-$shape.csv" >> "$W/bench-$v-$shape.txt" 2>&1
      grep '^best' "$W/bench-$v-$shape.txt"
    done
  done
} | tee "$W/summary.txt"
cp "$W/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/groupnorm-h200.tgz" -C "$W" .
