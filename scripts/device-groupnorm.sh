#!/usr/bin/env bash
# One device visit: configure and build sdspeed, list devices, run the GroupNorm
# accuracy check on the GPU and time the GroupNorm variants at the target
# shapes. Everything lands under $OUT (default ./out). Used through the device tool:
#   bash scripts/device-groupnorm.sh [quick|full]
set -uo pipefail
OUT=${OUT:-$PWD/out}
MODE=${1:-quick}
mkdir -p "$OUT"
export SDSPEED_CACHE_DIR=/tmp/sdspeed-cache
{
  echo "== host"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1
  ls /etc/OpenCL/vendors 2>&1
  echo "== build"
  cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF >/dev/null &&
    cmake --build build-dev -j16 2>&1 | grep -E 'error|warning' ; true
} 2>&1 | tee "$OUT/build.log"
BIN=build-dev/cli/sdspeed
[ -x $BIN ] || { echo "build failed"; exit 1; }
$BIN devices 2>&1 | tee "$OUT/devices.txt"
GPU=$($BIN devices | awk '/^\* /{print $2}')
echo "selected device $GPU"
CHECK_ARGS="--op groupnorm --device $GPU --points 2"
[ "$MODE" = full ] && CHECK_ARGS="$CHECK_ARGS --full"
( time $BIN check $CHECK_ARGS --csv "$OUT/check.csv" ) > "$OUT/check.txt" 2>&1
tail -3 "$OUT/check.txt"
for shape in 2x320x64x64 2x1280x8x8; do
  $BIN bench --op groupnorm --device $GPU --shape $shape --attrs g=32,silu=1 --variant one_pass \
    --points all --min-ms 20 --csv "$OUT/bench-one_pass-$shape.csv" > "$OUT/bench-one_pass-$shape.txt" 2>&1
  $BIN bench --op groupnorm --device $GPU --shape $shape --attrs g=32,silu=1 --variant two_pass \
    --points 60 --min-ms 20 --csv "$OUT/bench-two_pass-$shape.csv" > "$OUT/bench-two_pass-$shape.txt" 2>&1
  grep '^best' "$OUT"/bench-*-$shape.txt
done
