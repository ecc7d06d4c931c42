#!/usr/bin/env bash
# Device visit for the attention family: build sdspeed and sdspeed-bench, measure the
# device's ceilings (sdspeed roofline), check every attention variant on the GPU, then
# exhaustive tuning sweeps at the SD 1.5 shapes (flash first at the target
# S = L = 4096, D = 40, B*H = 16, in NCHW and NC4HW4 buffers; then every variant at the
# other levels, cross-attention L = 77, the VAE and CLIP), and finally sdspeed-bench
# against PyTorch on the same instances (scripts/bench-vs-pytorch) with the fresh
# database. Results: $OUT/attention-h200.tgz and $OUT/summary.txt.
#   bash scripts/device-attention.sh [SECONDS_PER_SWEEP]
set -uo pipefail
OUT=${OUT:-$PWD/out}
SECS=${1:-30}
W=$(mktemp -d)
export SDSPEED_CACHE_DIR=/tmp/sdspeed-cache
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF >/dev/null &&
  cmake --build build-dev -j16 --target sdspeed sdspeed-bench 2>&1 | grep -E 'error|warning' > "$W/build.log"
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
run roofline.txt roofline --device $GPU --devices-dir "$W/devices"
run check.txt check --op attention --device $GPU --points 1
T="tune --op attention --device $GPU --strategy exhaustive --min-ms 20 --llc-mib 60 --threads 16 --seconds $SECS"
T="$T --sweep-dir $W/sweeps --db-dir $W/tuned"
run tune-flash-4096.txt $T --shape 2x320x1x4096 --attrs heads=8 --variant flash --storage f32.buffer.nchw,f32.buffer.nc4hw4
run tune-cross-4096.txt $T --shape 2x320x1x4096 --attrs heads=8,kv=77 --storage f32.buffer.nchw,f32.buffer.nc4hw4
run tune-self-1024.txt $T --shape 2x640x1x1024 --attrs heads=8
run tune-cross-1024.txt $T --shape 2x640x1x1024 --attrs heads=8,kv=77
run tune-self-256.txt $T --shape 2x1280x1x256 --attrs heads=8
run tune-cross-256.txt $T --shape 2x1280x1x256 --attrs heads=8,kv=77
run tune-self-64.txt $T --shape 2x1280x1x64 --attrs heads=8
run tune-cross-64.txt $T --shape 2x1280x1x64 --attrs heads=8,kv=77
run tune-vae.txt $T --shape 1x512x1x4096 --attrs heads=1
run tune-clip.txt $T --shape 1x768x1x77 --attrs heads=12,causal=1
run tune-naive-4096.txt $T --shape 2x320x1x4096 --attrs heads=8 --variant naive,partially_fused_softmax
{ head -3 "$W/devices.txt"; tail -4 "$W/roofline.txt"; tail -3 "$W/check.txt"
  for f in "$W"/tune-*.txt; do echo "== $(basename $f)"; grep -E 'measured' "$f"; done; } | tee "$W/summary.txt"
# sdspeed-bench vs PyTorch on the attention instances, with this visit's database.
mkdir -p configs/tuned configs/devices && cp "$W"/tuned/*.yaml configs/tuned/ && cp "$W"/devices/*.yaml configs/devices/
OUT="$W/bench" BENCH=build-dev/bench/sdspeed-bench SHAPES= INSTANCES=bench/instances/sd15-512-attention.txt PEER_ONLY= \
  TIMEOUT=100 MIN_TIME=0.1 bash scripts/bench-vs-pytorch > "$W/bench-vs-pytorch.txt" 2>&1
tail -25 "$W/bench-vs-pytorch.txt" | tee -a "$W/summary.txt"
cp "$W/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/attention-h200.tgz" -C "$W" .
