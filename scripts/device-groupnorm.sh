#!/usr/bin/env bash
# One device visit for GroupNorm: build sdspeed, list devices, run the accuracy check
# on the GPU (quick set in every storage format, and the full SD 1.5 shape set), and
# time the variants at the foundation issue's target shapes (2x320x64x64 and
# 2x1280x8x8, fused SiLU, fp32, NCHW buffers). Every command it runs is echoed into
# the log next to its output. Logs and CSVs land in $OUT/groupnorm-h200.tgz, the
# summary in $OUT/summary.txt.
#   bash scripts/device-groupnorm.sh [POINTS]     (POINTS: sampled points per variant, default 60)
set -uo pipefail
OUT=${OUT:-$PWD/out}
POINTS=${1:-60}
W=$(mktemp -d)
export SDSPEED_CACHE_DIR=/tmp/sdspeed-cache
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1
  cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF >/dev/null &&
    cmake --build build-dev -j16 2>&1 | grep -E 'error|warning'; true
} > "$W/build.log" 2>&1
BIN=build-dev/cli/sdspeed
[ -x $BIN ] || { cat "$W/build.log"; echo "build failed"; exit 1; }
$BIN devices > "$W/devices.txt" 2>&1
GPU=$($BIN devices | awk '/^\* /{print $2}')

run() {  # run LOGNAME sdspeed ARGS...: log the command, its output and exit status
  local log="$W/$1"; shift; shift
  echo "\$ sdspeed $*" > "$log"
  $BIN "$@" >> "$log" 2>&1
  echo "exit status $?" >> "$log"
}
run check.txt sdspeed check --op groupnorm --device $GPU --points 2 --csv "$W/check.csv"
run check-full.txt sdspeed check --op groupnorm --device $GPU --points 0 --full \
  --storage f32.buffer.nchw,f16.buffer.nc4hw4,f32.image2d.nc4hw4 --csv "$W/check-full.csv"
{
  for f in check.txt check-full.txt; do head -1 "$W/$f"; tail -3 "$W/$f"; done
  # The H200's L2 is 60 MB; NVIDIA's OpenCL reports 4224 KiB, so rotate past 60 MiB.
  B="bench --op groupnorm --device $GPU --attrs g=32,silu=1 --llc-mib 60"
  for shape in 2x320x64x64 2x1280x8x8; do
    for v in split one_pass two_pass; do
      pts=$POINTS; [ $v = two_pass ] && pts=20
      run bench-$v-$shape.txt sdspeed $B --shape $shape --variant $v --points $pts --min-ms 20 --csv "$W/bench-$v-$shape.csv"
      grep '^best' "$W/bench-$v-$shape.txt"
    done
  done
  # The best points of earlier sweeps, timed longer (about 200 ms of device time each).
  for spec in "2x320x64x64 split CACHE=0,SPLIT=4,VEC=4,WG=512" "2x320x64x64 split CACHE=1,SPLIT=8,VEC=4,WG=256" \
              "2x320x64x64 one_pass CACHE=8,VEC=4,WG=1024" "2x1280x8x8 one_pass CACHE=0,VEC=4,WG=512" \
              "2x1280x8x8 one_pass CACHE=1,VEC=4,WG=256" "2x1280x8x8 split CACHE=1,SPLIT=3,VEC=4,WG=256"; do
    set -- $spec
    run best-$2-$1-$3.txt sdspeed $B --shape $1 --variant $2 --params $3 --min-ms 200 --warmup 20
    grep '^best' "$W/best-$2-$1-$3.txt"
  done
} | tee "$W/summary.txt"
cp "$W/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/groupnorm-h200.tgz" -C "$W" .
