#!/usr/bin/env bash
# The H200 visit for whole-model tuning (#23 item 6), through the device tool's `run`:
#   git rev-parse --short=12 HEAD > .device-commit   (here, before the visit)
#   bash scripts/device-tune-model.sh a   build; `tune --model` (SD 1.5, all three components,
#                                         512x512, batch 2) from an EMPTY database and sweep
#                                         folder (build-dev/tuned-new, build-dev/sweeps-new),
#                                         --total-seconds A_SECONDS (default 330), timed
#   bash scripts/device-tune-model.sh b   the same command resumed (--total-seconds B_SECONDS,
#                                         default 270): the two wall times sum to the tuning time
#   bash scripts/device-tune-model.sh c   one script run: the pipeline with the new database,
#                                         with the checked-in one (configs/tuned), and PyTorch
#                                         fp32/fp16 eager on the same machine
# The database and sweeps come back in $OUT/tune-PHASE.tgz after each step; a phase that finds
# no build-dev/tuned-new (a fresh machine) takes it from tune-carry/ (carried from here).
set -uo pipefail
PHASE=${1:-a}
source "$(dirname "${BASH_SOURCE[0]}")/device-lib.sh"
device_results tune-$PHASE  # log, pack, step, finish: scripts/device-lib.sh
S=build-dev/cli/sdspeed
DB=build-dev/tuned-new
SW=build-dev/sweeps-new
save_db() { mkdir -p "$R/db" && cp -r $DB "$R/db/" && cp -r $SW "$R/db/"; pack; }

if [ ! -x $S ]; then
  step 240 build bash -c "cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF && cmake --build build-dev -j16 --target sdspeed"
  [ -x $S ] || { tail -40 "$R/build.txt"; finish; }
fi
$S devices > "$R/devices.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$R/nvidia-smi.txt" 2>&1
if [ ! -d $DB ] && [ -d tune-carry/tuned-new ]; then
  mkdir -p build-dev && cp -r tune-carry/tuned-new tune-carry/sweeps-new build-dev/
  log "took the database and sweeps from tune-carry/"
fi
TUNE="$S tune --model configs/models/sd15 --width 512 --height 512 --batch 2 --strategy model --seed 1 --db-dir $DB --sweep-dir $SW --devices-dir configs/devices"

if [ "$PHASE" = a ]; then
  rm -rf $DB $SW && mkdir -p $DB $SW
  step $(( ${A_SECONDS:-330} + 90 )) tune-a $TUNE --total-seconds ${A_SECONDS:-330}
  save_db
fi
if [ "$PHASE" = b ]; then
  step $(( ${B_SECONDS:-270} + 90 )) tune-b $TUNE --total-seconds ${B_SECONDS:-270}
  save_db
fi
if [ "$PHASE" = c ]; then
  SD="--random-weights --model configs/models/sd15 -W 512 -H 512 --steps 20"
  step 150 run-new $S run $SD --db-dir $DB --report "$R/run-new.json" --profile
  step 150 run-checked-in $S run $SD --db-dir configs/tuned --report "$R/run-checked-in.json"
  if install_wheels; then
    step 240 peer-pytorch env OUT="$R" PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 python3 bench/peers/peer_sd15.py configs/models/sd15
  fi
fi
finish
