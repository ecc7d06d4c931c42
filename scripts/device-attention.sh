#!/usr/bin/env bash
# Device visit for the attention family: build sdspeed, check every variant on the GPU
# (quick problems, 1 sampled point), then exhaustive tuning sweeps at the SD 1.5 shapes
# of the targets (self-attention S = L = 4096, D = 40, B*H = 16; cross-attention
# L = 77) plus the other levels, fp32 buffers. Results: $OUT/attention-h200.tgz (logs,
# sweep CSVs, tuning database) and $OUT/summary.txt.
#   bash scripts/device-attention.sh [SECONDS_PER_SWEEP]
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
  timeout $((SECS + 120)) $BIN "$@" >> "$log" 2>&1
  echo "exit status $?" >> "$log"
}
run check.txt check --op attention --device $GPU --points 1
T="tune --op attention --device $GPU --strategy exhaustive --min-ms 20 --llc-mib 60 --threads 16 --seconds $SECS"
T="$T --sweep-dir $W/sweeps --db-dir $W/tuned"
run tune-self-4096.txt $T --shape 2x320x1x4096 --attrs heads=8
run tune-cross-4096.txt $T --shape 2x320x1x4096 --attrs heads=8,kv=77
run tune-self-1024.txt $T --shape 2x640x1x1024 --attrs heads=8
run tune-cross-1024.txt $T --shape 2x640x1x1024 --attrs heads=8,kv=77
run tune-self-256.txt $T --shape 2x1280x1x256 --attrs heads=8
run tune-vae.txt $T --shape 1x512x1x4096 --attrs heads=1
run tune-clip.txt $T --shape 1x768x1x77 --attrs heads=12,causal=1
{ head -3 "$W/devices.txt"; tail -3 "$W/check.txt"; for f in "$W"/tune-*.txt; do echo "== $(basename $f)"; grep -E '^best|best ' "$f" | head -8; tail -2 "$f"; done; } | tee "$W/summary.txt"
cp "$W/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/attention-h200.tgz" -C "$W" .
