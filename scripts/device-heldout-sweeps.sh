#!/usr/bin/env bash
# The H200 visit for the held-out replay check (#23 item 5), through the device tool's `run`:
#   git rev-parse --short=12 HEAD > .device-commit   (here, before the visit)
#   bash scripts/device-heldout-sweeps.sh            build; the exhaustive recordings below,
#                                                     each in its own sweep folder
# On a fresh machine, carry the earlier call's sweep folders (unpacked into
# build-dev/heldout/sweeps/NAME/) and name them: ONLY="NAME ..." SCALE=3 bash scripts/...
# Run it again on the same warm machine when the summary says a recording is incomplete: a
# sweep started again skips the points it already measured (the sweep cache), so the second
# call only measures what the first did not reach. DEADLINE (seconds into the call, default
# 530) cuts each step so the call ends within the tool's 10 minutes.
#
# The recordings are held out: made after the model-guided strategy's settings were fixed
# (tuning/strategy.cpp, tuning/surrogate.{h,cpp}), at instances none of the six recordings
# in tests/data/sweeps/ used. SD 1.5 512x512, batch 2, f32, in the pipeline's storage
# (NC4HW4); one instance per sweep folder, so each CSV is a replay recording
# (tests/test_tuner_offline.cpp, Replay.HeldOut*). Results: $OUT/heldout.tgz (the CSVs under
# heldout/sweeps/<name>/<device-key>/<family>.csv, each step's log, devices.txt,
# nvidia-smi.txt) and $OUT/heldout-summary.txt (rows per recording, complete or not). Last,
# if time is left, a second timing of one space (retime-*, a noise check, not a recording).
# Here, after the visit: scripts/import-heldout-sweeps FILES_AT/heldout.tgz copies the complete
# ones to tests/data/sweeps/held-out/opencl-nvidia-h200-580/NAME.csv and prints their README items.
set -uo pipefail
shopt -s nullglob  # the summary's loops print nothing for recordings not started
OUT=${OUT:-$PWD/out}
source "$(dirname "${BASH_SOURCE[0]}")/device-lib.sh"
device_results heldout  # pack, SDSPEED_COMMIT: scripts/device-lib.sh
T0=$SECONDS
DEADLINE=${DEADLINE:-530}
# Seconds into the call, not the clock: DEADLINE is counted that way.
log() { echo "[$((SECONDS - T0))s] $*" | tee -a "$R/steps.txt"; }
# Programs stay built between calls on the same machine (a resumed sweep rebuilds nothing).
export SDSPEED_CACHE_DIR=${SDSPEED_CACHE_DIR:-/tmp/sdspeed-cache}
S=build-dev/cli/sdspeed
W=build-dev/heldout  # sweep folders and scratch database, kept between calls (build-dev is ignored)

if [ ! -x $S ]; then
  log "start build"
  { cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF &&
      timeout 300 cmake --build build-dev -j16 --target sdspeed; } > "$R/build.txt" 2>&1
  log "end build: $([ -x $S ] && echo ok || echo FAILED)"
  [ -x $S ] || { tail -40 "$R/build.txt"; pack; exit 1; }
fi
$S devices > "$R/devices.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$R/nvidia-smi.txt" 2>&1
# The GPU's index as `devices` prints it ("P:D ... (GPU)"); sdspeed's default otherwise.
GPU=$(awk '/\(GPU\)$/{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+:[0-9]+$/) {print $i; exit}}' "$R/devices.txt")
DEV=(); [ -n "$GPU" ] && DEV=(--device "$GPU")
log "GPU device ${GPU:-default}"
mkdir -p "$W/tuned"  # a scratch database: configs/tuned is not touched

# record NAME SECONDS TUNE-ARGS...: one exhaustive sweep into $W/sweeps/NAME, stopped between
# points after SECONDS (and by `timeout` 60 s later: the reference and the last builds), cut
# to the call's DEADLINE. Builder threads on 15 of the 16 cores, as in the earlier H200
# recordings (scripts/device-sweeps-bench.sh); --llc-mib 60 flushes the L2 between repeats.
record() {
  local name=$1 secs=$2; shift 2
  # ONLY="a b": record just those (a later call finishing what an earlier one cut short,
  # its sweep folders carried back); SCALE=N multiplies each --seconds.
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
  secs=$((secs * ${SCALE:-1}))
  local left=$((DEADLINE - (SECONDS - T0) - 40))
  [ $left -ge 20 ] || { log "skip $name: no time left"; return; }
  [ $secs -le $left ] || secs=$left
  log "start $name (--seconds $secs)"
  echo "\$ sdspeed tune ${DEV[*]} --strategy exhaustive --min-ms 5 --llc-mib 60 --threads 15 --seconds $secs $*" > "$R/$name.txt"
  timeout $((secs + 60)) $S tune "${DEV[@]}" --strategy exhaustive --min-ms 5 --llc-mib 60 --threads 15 --seconds "$secs" \
    --sweep-dir "$W/sweeps/$name" --db-dir "$W/tuned" "$@" 2>&1 | tr '\r' '\n' | grep -v '^\[' >> "$R/$name.txt"
  local rc=${PIPESTATUS[0]}
  echo "exit status $rc" >> "$R/$name.txt"
  log "end $name: exit $rc; $(grep -E 'exhaustive, [0-9]+ of [0-9]+ points' "$R/$name.txt" | tail -1)"
  mkdir -p "$R/sweeps" && cp -r "$W/sweeps/$name" "$R/sweeps/"
  pack
}

# Cheapest first, so a short call still completes two. Spaces (all variants): attention
# 108 points (naive, flash), conv direct 243 + winograd_f4x4_3x3 93 = 336, GroupNorm 990
# on this GPU (930 the earlier recording measured, 60 refused by work-group limits).
# The UNet's cross-attention (77 text tokens) at D = 40 / 4096 queries and D = 80 / 1024:
record attn-cross-4096 60 --op attention --shape 2x320x1x4096 --attrs heads=8,kv=77 --storage f32.buffer.nc4hw4
record attn-cross-1024 50 --op attention --shape 2x640x1x1024 --attrs heads=8,kv=77 --storage f32.buffer.nc4hw4
# The UNet's 64x64 self-attention (4096 tokens, D = 40): the six tuning recordings' attention
# is the 32x32 level's (1024 tokens, D = 80).
record attn-self-4096 120 --op attention --shape 2x320x1x4096 --attrs heads=8 --storage f32.buffer.nc4hw4
# The UNet's 16x16 ResNet convolution (1280 channels), two of its variants:
record conv-16x16 120 --op conv --shape 2x1280x16x16 --attrs cout=1280,k=3 --storage f32.buffer.nc4hw4 \
  --variant direct,winograd_f4x4_3x3
# GroupNorm (+SiLU) at the 32x32 level, 640 channels:
record groupnorm-2x640x32x32 150 --op groupnorm --shape 2x640x32x32 --attrs g=32,silu=1 --storage f32.buffer.nc4hw4

# A second timing of the D = 80 cross-attention space, programs already built (seconds): how
# far the H200's timings move the top of a space (on the loaded PoCL VM the best point of a
# re-timed space moved by 1.5x: results/sweeps/held-out-retimed/). Not a held-out recording:
# scripts/import-heldout-sweeps skips retime-*.
record retime-attn-cross-1024 40 --op attention --shape 2x640x1x1024 --attrs heads=8,kv=77 --storage f32.buffer.nc4hw4

# Rows per recording; "complete" is tune's own "N of N points" line with nothing left.
{
  echo "commit ${SDSPEED_COMMIT:-unknown}, $(date -u +%FT%TZ)"
  for f in "$R"/*.txt; do
    case $(basename "$f") in steps.txt|devices.txt|nvidia-smi.txt|build.txt) continue;; esac
    echo "== $(basename "$f" .txt)"; grep -E 'exhaustive, [0-9]+ of|measured,|exit status' "$f"
  done
  for c in "$W"/sweeps/*/*/*.csv; do echo "$c: $(($(wc -l < "$c") - 1)) rows"; done
} > "$OUT/heldout-summary.txt" 2>&1
cp "$OUT/heldout-summary.txt" "$R/"
log done
pack
cat "$OUT/heldout-summary.txt"
