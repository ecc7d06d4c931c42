#!/usr/bin/env bash
# Device visit for the GEMM and convolution families: build, check both on the GPU
# (quick problems), then sweeps at the H200 targets: GEMM 8192x320 -> 2560 with
# GEGLU, conv3x3 2x320x64x64 -> 320 and 2x1280x16x16 -> 1280 (fp32, NC4HW4 and NCHW
# buffers). Results: $OUT/gemm-conv-h200.tgz and $OUT/summary.txt.
#   bash scripts/device-gemm-conv.sh [SECONDS_PER_SWEEP]
set -uo pipefail
OUT=${OUT:-$PWD/out}
SECS=${1:-90}
W=$(mktemp -d)
export SDSPEED_CACHE_DIR=/tmp/sdspeed-cache
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF -DSDSPEED_BUILD_PIPELINE=OFF >/dev/null 2>"$W/configure.log" &&
  cmake --build build-dev -j16 --target sdspeed 2>&1 | grep -E 'error|warning' > "$W/build.log"
BIN=build-dev/cli/sdspeed
[ -x $BIN ] || { cat "$W/configure.log" "$W/build.log"; echo "build failed"; exit 1; }
GPU=$($BIN devices | awk '/^\* /{print $2}')
run() { local log="$W/$1"; shift; echo "\$ sdspeed $*" > "$log"; timeout $((SECS + 60)) $BIN "$@" >> "$log" 2>&1; echo "exit status $?" >> "$log"; }
run check-gemm.txt check --op gemm --device $GPU --points 1
run check-conv.txt check --op conv --device $GPU --points 1
T="tune --device $GPU --strategy random --budget 60 --min-ms 20 --llc-mib 60 --threads 16 --seconds $SECS --sweep-dir $W/sweeps --db-dir $W/tuned"
run tune-gemm-geglu.txt $T --op gemm --shape 2x320x1x4096 --attrs n=2560,epilogue=geglu --variant tiled --storage f32.buffer.nc4hw4
run tune-conv-320.txt $T --op conv --shape 2x320x64x64 --attrs cout=320 --storage f32.buffer.nc4hw4
run tune-conv-1280.txt $T --op conv --shape 2x1280x16x16 --attrs cout=1280 --storage f32.buffer.nc4hw4
{ for f in "$W"/check-*.txt; do echo "== $(basename $f)"; tail -3 "$f"; done
  for f in "$W"/tune-*.txt; do echo "== $(basename $f)"; grep -E 'measured' "$f"; tail -1 "$f"; done; } | tee "$W/summary.txt"
cp "$W/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/gemm-conv-h200.tgz" -C "$W" .
