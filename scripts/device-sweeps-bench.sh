#!/usr/bin/env bash
# Device visit for issues #6 and #7 on an nvidia-h200 machine, in calls of at most 10
# minutes on the same warm machine (each right after the one before):
#   bash scripts/device-sweeps-bench.sh a
#     build sdspeed + sdspeed-bench; start the PoCL recordings in the background
#     (setsid, CPU cores 8-15, PoCL limited to 8 threads); on the GPU (host side on cores
#     0-7): the exhaustive flash sweep at S = L = 4096, D = 40 in NCHW and NC4HW4; the
#     exhaustive replay recordings of groupnorm (at 2x320x64x64: the H200 database's
#     GroupNorm entry), attention (the UNet's D = 80 self-attention, NC4HW4) and gemm; a
#     random search of the D = 160 self-attention (NC4HW4). SKIP_DONE=0 also runs visit 2's
#     checks of the small families and the GEGLU-against-copy bench.
#   bash scripts/device-sweeps-bench.sh b
#     sdspeed-bench against PyTorch over every family (scripts/bench-vs-pytorch), completes
#     the GPU recordings, waits for the PoCL recordings and packs everything.
#   bash scripts/device-sweeps-bench.sh c   (optional, device time permitting)
#     tunes the families the H200 database lacks at the bench's instances, then GroupNorm
#     at every SD 1.5 instance.
#   bash scripts/device-sweeps-bench.sh d   (repeat until its summary says 437 of 437)
#     the exhaustive GEMM replay recording at `gemm 2x640x1x1024 n=1920 bias=0` on all 16
#     cores (14 builder threads); no PoCL work beside it. A call cut off by DEADLINE
#     resumes from the sweep cache in the next call.
# DEADLINE (seconds into the call, default 540; pass it for each phase: a 520, b 530,
# c what is left) cuts the steps so the call ends in time.
# Work folder /tmp/visit (kept between the calls); results: $OUT/visit-<phase>.tgz and
# $OUT/summary-<phase>.txt. Each step runs under `timeout`, so a slow one cannot eat the
# call; the step's command line, output and exit status go to its log.
set -uo pipefail
shopt -s nullglob  # a summary loop over logs a phase did not write prints nothing
PHASE=${1:?usage: device-sweeps-bench.sh a|b|c|d}
case "$PHASE" in a|b|c|d) ;; *) echo "usage: device-sweeps-bench.sh a|b|c|d (got '$PHASE')"; exit 2;; esac
OUT=${OUT:-$PWD/out}
W=/tmp/visit
mkdir -p "$W" "$OUT"
export SDSPEED_CACHE_DIR=/tmp/sdspeed-cache
# The device copy has no usable .git: the commit comes from .device-commit
# (`git rev-parse --short=12 HEAD > .device-commit` before the visit).
[ -f .device-commit ] && export SDSPEED_COMMIT=$(cat .device-commit)
if [ -d .git ] && [ -n "${SDSPEED_COMMIT:-}" ] && ! git rev-parse --short=12 HEAD 2>/dev/null | grep -q "^${SDSPEED_COMMIT:0:7}"; then
  echo "warning: .device-commit ($SDSPEED_COMMIT) is not HEAD ($(git rev-parse --short=12 HEAD)): rewrite it before the visit"
fi
BIN=${BIN:-build-dev/cli/sdspeed}
BENCH=${BENCH:-build-dev/bench/sdspeed-bench}
GPUCPU="taskset -c ${GPU_CORES:-0-7}"  # the GPU side's host work
POCLCPU="taskset -c ${POCL_CORES:-8-15}"  # PoCL's timed runs
T0=$SECONDS
log() { echo "[$((SECONDS - T0))s] $*" | tee -a "$W/progress-$PHASE.txt"; }
DEADLINE=${DEADLINE:-540}  # seconds into the call after which no step starts; steps are cut to end by then
run() {  # run LOGNAME LIMIT_S ARGS...: sdspeed on the GPU side's cores, logged
  local name=$1 limit=$2; shift 2
  local left=$((DEADLINE - (SECONDS - T0)))
  [ $left -ge 20 ] || { log "skip $name: no time left"; return; }
  [ $limit -le $left ] || limit=$left
  log "start $name (limit ${limit}s)"
  echo "\$ sdspeed $*" > "$W/$name"
  $GPUCPU timeout "$limit" $BIN "$@" >> "$W/$name" 2>&1
  local rc=$?
  echo "exit status $rc" >> "$W/$name"
  log "end $name: exit $rc"
}
build() {
  [ -x $BIN ] && [ -x $BENCH ] && return 0
  log "build"
  { cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF -DSDSPEED_BUILD_PIPELINE=OFF &&
      timeout 400 cmake --build build-dev -j16 --target sdspeed sdspeed-bench; } > "$W/build.log" 2>&1
  [ -x $BIN ] && [ -x $BENCH ] || { tail -40 "$W/build.log"; echo "build failed"; return 1; }
  log "built"
}
devices() {
  $BIN devices > "$W/devices.txt" 2>&1
  GPU=$(awk '/\(GPU\)$/{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+:[0-9]+$/) {print $i; exit}}' "$W/devices.txt")
  CPU=$(awk '/\(CPU\)$/{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+:[0-9]+$/) {print $i; exit}}' "$W/devices.txt")
  log "GPU device $GPU, CPU device $CPU"
}

recordings() {  # GPU replay recordings (exhaustive); a sweep cut short resumes where it stopped
  local R="tune --device $GPU --strategy exhaustive --min-ms 5 --llc-mib 60 --threads 8 --db-dir $W/tuned --sweep-dir $W/sweeps-rec"
  run tune-rec-groupnorm${1:-}.txt 130 $R --seconds 120 --op groupnorm --shape 2x320x64x64 --attrs g=32,silu=1
  run tune-rec-attention${1:-}.txt 50 $R --seconds 40 --op attention --shape 2x640x1x1024 --attrs heads=8 \
    --storage f32.buffer.nc4hw4
  run tune-rec-gemm${1:-}.txt 80 $R --seconds 70 --op gemm --shape 2x640x1x1024 --attrs n=1920,bias=0
}

if [ "$PHASE" = a ]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$W/nvidia-smi.txt" 2>&1
  build || exit 1
  devices
  # Tuning databases start from the checked-in ones, so the new entries merge with them.
  mkdir -p "$W/tuned" && cp configs/tuned/*.yaml "$W/tuned/"

  # PoCL recordings (background, CPU cores 8-15): first a pass that builds every point
  # (programs into the disk caches, timing at 1 ms, thrown away), then the recorded
  # exhaustive sweep with one builder thread, which finds every program built, so no
  # compiler runs beside the timed launches.
  cat > "$W/pocl.sh" <<EOF
set -u
cd "$PWD"
export SDSPEED_CACHE_DIR=$SDSPEED_CACHE_DIR POCL_CPU_MAX_CU_COUNT=8 POCL_MAX_PTHREAD_COUNT=8
P="$POCLCPU $BIN tune --device $CPU --strategy exhaustive --db-dir $W/tuned"
one() {  # one NAME LIMIT ARGS...
  local name=\$1 limit=\$2; shift 2
  echo "[\$SECONDS s] start \$name" >> $W/pocl-progress.txt
  timeout \$((limit / 2)) \$P --min-ms 1 --threads 8 --sweep-dir $W/pocl-warm "\$@" > $W/pocl-warm-\$name.txt 2>&1
  echo "\\\$ sdspeed tune --device $CPU --strategy exhaustive --min-ms 10 --threads 1 \$*" > $W/pocl-tune-\$name.txt
  timeout \$limit \$P --min-ms 10 --threads 1 --sweep-dir $W/sweeps-rec "\$@" >> $W/pocl-tune-\$name.txt 2>&1
  echo "exit status \$?" >> $W/pocl-tune-\$name.txt
  echo "[\$SECONDS s] end \$name" >> $W/pocl-progress.txt
}
one groupnorm 300 --op groupnorm --shape 2x640x32x32 --attrs g=32,silu=1
one attention 150 --op attention --shape 1x128x1x256 --attrs heads=2
one gemm 300 --op gemm --shape 1x256x1x256 --attrs n=256
touch $W/pocl.done
EOF
  setsid nohup bash "$W/pocl.sh" > "$W/pocl-nohup.txt" 2>&1 < /dev/null &
  log "PoCL recordings started in the background"

  # 1. (The checks of layernorm, softmax, activation and the elementwise helpers ran in
  #    visit 2: results/h200/families/. SKIP_DONE=0 runs them again.)
  if [ "${SKIP_DONE:-1}" = 0 ]; then
    FAMS=layernorm,softmax,activation,binary,upsample,concat,reshape,embedding,timestep
    run check.txt 60 check --op $FAMS --device $GPU --points 1
  fi

  # 2. Flash attention at S = L = 4096, D = 40, B*H = 16: the whole flash space, both layouts.
  G="tune --device $GPU --strategy exhaustive --min-ms 15 --llc-mib 60 --threads 8 --db-dir $W/tuned"
  run tune-flash-4096.txt 80 $G --sweep-dir $W/sweeps-work --seconds 35 --op attention --shape 2x320x1x4096 \
    --attrs heads=8 --variant flash --storage f32.buffer.nchw,f32.buffer.nc4hw4

  # 3. Standalone GEGLU against a copy of the same bytes (ran in visit 2; SKIP_DONE=0 again).
  if [ "${SKIP_DONE:-1}" = 0 ]; then
    run bench-geglu.txt 25 bench --op activation --shape 2x2560x1x4096 --attrs fn=geglu --points all --device $GPU \
      --llc-mib 60 --csv $W/bench-geglu.csv
    run bench-copy.txt 20 bench --op reshape --shape 2x1920x1x4096 --attrs h=1 --points all --device $GPU \
      --llc-mib 60 --csv $W/bench-copy.csv
  fi

  # 4. Replay recordings (exhaustive, one instance per family; the GroupNorm one at the
  #    issue's 2x320x64x64 also gives the H200 database its GroupNorm entry); phase b
  #    completes them.
  recordings
  # 5. The UNet's D = 160 self-attention in the pipeline's storage (the D = 80 one is the
  #    attention recording above): the pipeline ran both with parameters tuned for D = 40.
  run tune-attn-d160.txt 45 tune --device $GPU --strategy random --min-ms 15 --llc-mib 60 --threads 8 --db-dir $W/tuned \
    --sweep-dir $W/sweeps-work --seconds 35 --op attention \
    --shape 2x1280x1x256 --attrs heads=8 --storage f32.buffer.nc4hw4
  { cat "$W/progress-a.txt"; for f in "$W"/check*.txt; do echo "== $(basename $f)"; tail -2 "$f"; done
    for f in "$W"/tune-*.txt; do echo "== $(basename $f)"; grep -E 'measured|^attention|^gemm|^groupnorm' "$f"; done
    for f in "$W"/bench-*.txt; do echo "== $(basename $f)"; grep -E '^best|exit' "$f"; done
    cat "$W/pocl-progress.txt" 2>/dev/null; } > "$OUT/summary-a.txt"
  tar czf "$OUT/visit-a.tgz" -C "$W" --exclude='pocl-warm*' . 2>/dev/null
  cat "$OUT/summary-a.txt"
  exit 0
fi

# Phase d: the GEMM replay recording. --seconds stops the sweep between points 30 s
# before the deadline; `timeout` is the backstop. Everything measured is in the sweep
# cache the moment it is measured, so a second `d` continues.
if [ "$PHASE" = d ]; then
  build || exit 1
  devices
  [ -d "$W/tuned" ] || { mkdir -p "$W/tuned" && cp configs/tuned/*.yaml "$W/tuned/"; }
  left=$((DEADLINE - (SECONDS - T0) - 30))
  GPUCPU="taskset -c 0-15" run tune-rec-gemm-d.txt $((left + 25)) tune --device $GPU --strategy exhaustive \
    --min-ms 5 --llc-mib 60 --threads 14 --db-dir $W/tuned --sweep-dir $W/sweeps-rec --seconds $left \
    --op gemm --shape 2x640x1x1024 --attrs n=1920,bias=0
  { cat "$W/progress-d.txt"; grep -E 'points$|measured|exit' "$W/tune-rec-gemm-d.txt"
    echo "rows: $(grep -c '^gemm 2x640x1x1024' "$W/sweeps-rec/opencl-nvidia-h200-580/gemm.csv" 2>/dev/null)"; } > "$OUT/summary-d.txt"
  tar czf "$OUT/visit-d.tgz" -C "$W" --exclude='pocl-warm*' . 2>/dev/null
  cat "$OUT/summary-d.txt"; tail -3 "$W/tune-rec-gemm-d.txt"
  exit 0
fi

# Phase c (optional, when device time is left after b): tune the families the H200
# database has no entries for, at the bench's instances (bench/instances/sd15-512-tokens.txt
# and -elementwise.txt, one instance per line), exhaustive within a few seconds each,
# then GroupNorm at the shape set's 25 instances with a random budget. The checked-in
# sweeps seed the work folder: `tune` rebuilds an instance's database entry from the
# sweep folder it is given, so the exhaustive GroupNorm recording must be in it.
if [ "$PHASE" = c ]; then
  build || exit 1
  devices
  [ -d "$W/tuned" ] || { mkdir -p "$W/tuned" && cp configs/tuned/*.yaml "$W/tuned/"; }
  mkdir -p "$W/sweeps-work/opencl-nvidia-h200-580"
  for f in results/sweeps/opencl-nvidia-h200-580/*.csv; do
    [ -e "$W/sweeps-work/opencl-nvidia-h200-580/$(basename "$f")" ] || cp "$f" "$W/sweeps-work/opencl-nvidia-h200-580/"
  done
  T="tune --device $GPU --min-ms 5 --llc-mib 60 --threads 8 --db-dir $W/tuned --sweep-dir $W/sweeps-work"
  n=0
  # An instance line: "family NxCxHxW k=v ... storage" -> --op, --shape, --attrs, --storage.
  grep -h -v -e '^#' -e '^[[:space:]]*$' bench/instances/sd15-512-tokens.txt bench/instances/sd15-512-elementwise.txt |
    grep -v -E '^(gemm|attention|groupnorm|conv) ' > "$W/instances-c.txt"
  while read -r fam shape rest; do
    words=($rest); storage=${words[-1]}; attrs=$(IFS=,; echo "${words[*]:0:${#words[@]}-1}")
    n=$((n + 1))
    run tune-c$n-$fam.txt 25 $T --strategy exhaustive --seconds 8 --op "$fam" --shape "$shape" \
      ${attrs:+--attrs "$attrs"} --storage "$storage" < /dev/null
  done < "$W/instances-c.txt"
  run tune-groupnorm-sd15.txt 200 $T --strategy random --budget 40 --seconds 6 --op groupnorm \
    --shapes configs/shapes/sd15-512.yaml
  { cat "$W/progress-c.txt"; for f in "$W"/tune-c[0-9]*.txt "$W"/tune-groupnorm-sd15.txt; do
      echo "== $(basename $f)"; grep -E 'measured|exit' "$f"; done; } > "$OUT/summary-c.txt"
  tar czf "$OUT/visit-c.tgz" -C "$W" --exclude='pocl-warm*' . 2>/dev/null
  cat "$OUT/summary-c.txt"
  exit 0
fi

# Phase b.
build || exit 1
devices
[ -d "$W/tuned" ] || { mkdir -p "$W/tuned" && cp configs/tuned/*.yaml "$W/tuned/"; }
# 6. sdspeed-bench against PyTorch: every family with a PyTorch counterpart.
cp "$W"/tuned/*.yaml configs/tuned/
log "bench-vs-pytorch"
# Every family with a PyTorch counterpart: the GroupNorm subset, the token ops, the
# Linear layers, the convolutions, attention (its flash kernel changed since visit 2)
# and the elementwise helpers.
INSTANCES=""
for f in groupnorm tokens linear conv attention elementwise; do
  [ -f bench/instances/sd15-512-$f.txt ] && INSTANCES="$INSTANCES bench/instances/sd15-512-$f.txt"
done
INSTANCES="$INSTANCES" \
SHAPES= OUT="$W/bench" BENCH=$BENCH TIMEOUT=${BENCH_TIMEOUT:-170} MIN_TIME=0.05 PEER_ONLY= $GPUCPU bash scripts/bench-vs-pytorch > "$W/bench-vs-pytorch.txt" 2>&1
log "bench-vs-pytorch exit $?"
# 7. Complete the GPU recordings if phase a ran out of time (every measured point is reused).
recordings -b
# 8. The PoCL recordings: wait for them while the call has time left.
while [ ! -e "$W/pocl.done" ] && [ $((SECONDS - T0)) -lt $((DEADLINE + 15)) ]; do sleep 5; done
log "PoCL done: $([ -e "$W/pocl.done" ] && echo yes || echo NO)"
{ cat "$W/progress-a.txt" "$W/progress-b.txt" "$W/pocl-progress.txt" 2>/dev/null
  for f in "$W"/tune-rec-*-b.txt "$W"/pocl-tune-*.txt; do echo "== $(basename $f)"; grep -E 'measured|exit' "$f"; done
  grep -E 'exit status' "$W/bench/run.log"; } > "$OUT/summary-b.txt"
tar czf "$OUT/visit-b.tgz" -C "$W" --exclude='pocl-warm*' . 2>/dev/null
cat "$OUT/summary-b.txt"; tail -60 "$W/bench/comparison.md" 2>/dev/null
