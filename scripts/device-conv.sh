#!/usr/bin/env bash
# Device visit for the conv family (issue #5): build sdspeed, measure the device's
# ceilings, check every conv variant on the GPU (quick set, then the two
# target shapes), then exhaustive tuning sweeps at the targets: conv3x3
# 2x320x64x64 -> 320 (<= 0.30 ms, cuDNN fp32 0.553 ms) and 2x1280x16x16 -> 1280
# (<= 0.70 ms), Winograd F(4x4) first, then F(2x2), F(6x6), direct and im2col_gemm; and
# the 1x1 and stride-2 shapes of the UNet. Results: $OUT/conv-h200.tgz, $OUT/summary.txt.
#   bash scripts/device-conv.sh [SECONDS_PER_SWEEP]
set -uo pipefail
OUT=${OUT:-$PWD/out}
SECS=${1:-60}
W=$(mktemp -d)
export SDSPEED_CACHE_DIR=/tmp/sdspeed-cache
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF >/dev/null &&
  cmake --build build-dev -j16 --target sdspeed 2>&1 | grep -E 'error|warning' > "$W/build.log"
BIN=build-dev/cli/sdspeed
[ -x $BIN ] || { cat "$W/build.log"; echo "build failed"; exit 1; }
$BIN devices > "$W/devices.txt" 2>&1
GPU=$($BIN devices | awk '/^\* /{print $2}')
run() {  # run LOGNAME ARGS...: log the command, its output and exit status
  local log="$W/$1"; shift
  echo "\$ sdspeed $*" > "$log"
  timeout $((SECS + 300)) $BIN "$@" >> "$log" 2>&1
  echo "exit status $?" >> "$log"
}
run roofline.txt roofline --device $GPU --devices-dir "$W/devices"
run check.txt check --op conv --device $GPU --points 1
# Errors against the double reference at the targets, f32 buffers, every variant.
run check-targets-320.txt check --op conv --device $GPU --points 0 --storage f32.buffer.nchw,f32.buffer.nc4hw4 \
  --shape 2x320x64x64 --attrs cout=320
run check-targets-1280.txt check --op conv --device $GPU --points 0 --storage f32.buffer.nchw,f32.buffer.nc4hw4 \
  --shape 2x1280x16x16 --attrs cout=1280
T="tune --op conv --device $GPU --strategy exhaustive --min-ms 20 --llc-mib 60 --threads 16 --seconds $SECS"
T="$T --sweep-dir $W/sweeps --db-dir $W/tuned --storage f32.buffer.nchw,f32.buffer.nc4hw4"
for v in winograd_f4x4_3x3 winograd_f2x2_3x3 winograd_f6x6_3x3 direct im2col_gemm; do
  run tune-320-$v.txt $T --shape 2x320x64x64 --attrs cout=320 --variant $v
  run tune-1280-$v.txt $T --shape 2x1280x16x16 --attrs cout=1280 --variant $v
done
run tune-1x1-640.txt $T --shape 2x640x32x32 --attrs cout=640,k=1 --variant conv1x1,im2col_gemm,direct
run tune-down-320.txt $T --shape 2x320x64x64 --attrs cout=320,stride=2 --variant direct,im2col_gemm
{ head -3 "$W/devices.txt"; tail -4 "$W/roofline.txt"; tail -3 "$W/check.txt"; cat "$W"/check-targets*.txt
  for f in "$W"/tune-*.txt; do echo "== $(basename $f)"; grep -E 'measured|best' "$f"; done; } | tee "$W/summary.txt"
mkdir -p "$OUT" && cp "$W/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/conv-h200.tgz" -C "$W" .
