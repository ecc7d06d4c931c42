#!/usr/bin/env bash
# The H200 visit for the memory issue (#18), through the device tool's `run`:
#   git rev-parse --short=12 HEAD > .device-commit   (here, before the visit)
#   bash scripts/device-memory.sh a   build; the planner's cost (op-by-op profiles with no
#                                     planner, the arena with offsets, the arena through
#                                     sub-buffers); f32 runs unlimited and with 4.5GB;
#                                     PyTorch fp32/fp16 eager peaks on the same machine
#   bash scripts/device-memory.sh b   f16 weights + f16 activations: unlimited, 2.6GB, 1.8GB,
#                                     1GiB; f32 unlimited and 4.5GB; the memory ablation
#                                     (configs/ablation/memory.yaml)
#   bash scripts/device-memory.sh c1  f16 storage + f16 weights tuned for attention and
#                                     GroupNorm (model-guided, into build-dev/tuned, a copy of
#                                     configs/tuned: the next call's tree copy would overwrite
#                                     configs/), the database and sweeps packed
#   bash scripts/device-memory.sh c2  (same machine, right after c1) with that database:
#                                     f16 unlimited, 2.6GB, 1.8GB, 1GiB from pinned and from
#                                     pageable host copies (nvidia-smi's memory.used sampled
#                                     beside both: pinned staging must not take device memory),
#                                     1GiB profiled; f32 unlimited and 4.5GB; PyTorch fp32/fp16
#                                     peaks in the same call; the memory ablation
#   bash scripts/device-memory.sh d   the same after the staging ring and the new VAE tiles
#                                     (c1's database if still on the machine)
#   bash scripts/device-memory.sh e   flash tuned at the f16 4096-token self-attention,
#                                     then the f16 runs (unlimited, 1GiB, 2.6GB, 1.8GB) again
#   bash scripts/device-memory.sh f   after nearest-instance defaults: f32, f16, f16 1GiB
# SD 1.5 512x512, batch 2, 20 PNDM steps, seeded random weights, every run with --report.
# Every step is capped; the results land in $OUT/memory-PHASE.tgz after each step.
set -uo pipefail
PHASE=${1:-a}
source "$(dirname "${BASH_SOURCE[0]}")/device-lib.sh"
device_results memory-$PHASE  # log, pack, step, finish: scripts/device-lib.sh
S=build-dev/cli/sdspeed
SD="--random-weights --model configs/models/sd15 -W 512 -H 512 --steps 20"
run() {  # run NAME CAP ARGS...: one sdspeed run with its JSON report
  local name=$1 cap=$2; shift 2
  step "$cap" "$name" $S run $SD --report "$R/$name.json" -o "$R/$name.png" "$@"
}

if [ ! -x $S ]; then
  step 200 build bash -c "cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF && cmake --build build-dev -j16 --target sdspeed"
  [ -x $S ] || { tail -40 "$R/build.txt"; finish; }
fi
$S devices > "$R/devices.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$R/nvidia-smi.txt" 2>&1

if [ "$PHASE" = a ]; then
  # The first run builds every program (cold cache) and is not compared.
  run f32-warm 150 --no-decode --steps 2
  run f32-noplanner-profile 90 --planner none --profile --no-decode
  run f32-offsets-profile 90 --profile --no-decode
  run f32-subbuffers-profile 90 --arena-binding sub-buffers --scratch own --profile --no-decode
  python3 scripts/dev/compare-profiles.py "$R/f32-noplanner-profile.json" "$R/f32-offsets-profile.json" \
    "$R/f32-subbuffers-profile.json" > "$R/planner-profiles.txt" 2>&1
  run f32-noplanner 90 --planner none
  run f32 90
  run f32-4.5GB 90 --memory-budget 4.5GB
  if install_wheels; then
    step 240 peer-pytorch env OUT="$R" PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 python3 bench/peers/peer_sd15.py configs/models/sd15
  fi
  finish
fi
if [ "$PHASE" = b ]; then
  F16="--precision f16 --weights f16"
  run f16-warm 150 $F16 --no-decode --steps 2
  run f16 90 $F16
  run f16-2.6GB 90 $F16 --memory-budget 2.6GB
  run f16-1.8GB 90 $F16 --memory-budget 1.8GB
  run f16-1GiB 120 $F16 --memory-budget 1GiB
  # f32 again now that components are released (phase a's peaks held all three)
  run f32 90
  run f32-4.5GB 90 --memory-budget 4.5GB
  step 300 ablate-memory $S ablate --random-weights --model configs/models/sd15 -W 512 -H 512 --steps 20 \
    --ablation configs/ablation/memory.yaml --out "$R/ablation"
  finish
fi
DB=build-dev/tuned
if [ "$PHASE" = c1 ]; then
  mkdir -p $DB && cp configs/tuned/*.yaml $DB/
  F16="--precision f16 --weights f16"
  run f16-warm 150 $F16 --no-decode --steps 2 --db-dir $DB
  for op in attention groupnorm; do
    step 160 tune-f16-$op $S tune --op $op --model configs/models/sd15 --storage f16.buffer.nc4hw4 --weights f16 \
      --strategy model --seconds $([ $op = attention ] && echo 12 || echo 5) --threads 16 --min-ms 5 --llc-mib 60 --sweep-dir build-dev/sweeps --db-dir $DB
  done
  cp $DB/opencl-nvidia-h200-580.yaml "$R/" && cp -r build-dev/sweeps "$R/sweeps"
  finish
fi
# sampled NAME CAP ARGS...: a run with nvidia-smi's memory.used (MiB, driver context
# included) sampled every 100 ms beside it; the largest sample goes to NAME-smi-max.txt.
sampled() {
  local name=$1
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$R/$name-smi.txt" 2>&1 &
  local smi=$!
  run "$@"
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  sort -n "$R/$name-smi.txt" | tail -1 > "$R/$name-smi-max.txt"
  rm -f "$R/$name-smi.txt"
}
# PyTorch's peaks (diffusers carried as a wheel in .whl) and the memory ablation with $DB,
# in the same call as the runs before them; then the phase ends.
peer_and_ablation() {
  if install_wheels; then
    step 240 peer-pytorch env OUT="$R" PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 python3 bench/peers/peer_sd15.py configs/models/sd15
  fi
  step 300 ablate-memory $S ablate --random-weights --model configs/models/sd15 -W 512 -H 512 --steps 20 \
    --ablation configs/ablation/memory.yaml --db-dir $DB --out "$R/ablation"
  finish
}
if [ "$PHASE" = c2 ]; then
  F16="--precision f16 --weights f16 --db-dir $DB"
  run f16 90 $F16
  run f16-2.6GB 90 $F16 --memory-budget 2.6GB
  run f16-1.8GB 90 $F16 --memory-budget 1.8GB
  sampled f16-1GiB 120 $F16 --memory-budget 1GiB
  sampled f16-1GiB-pageable 150 $F16 --memory-budget 1GiB --stream-staging pageable
  run f16-1GiB-profile 150 $F16 --memory-budget 1GiB --profile --no-decode
  run f16-profile 90 $F16 --profile --no-decode
  run f32 90 --db-dir $DB
  run f32-4.5GB 90 --db-dir $DB --memory-budget 4.5GB
  peer_and_ablation
fi
if [ "$PHASE" = d ]; then
  # After c1/c2: streamed weights through the pinned ring (counted), VAE tiles of the
  # least redundant work; nvidia-smi beside the unlimited and the budget runs. Uses c1's
  # database when this machine still has it (build-dev/tuned), else the checked-in one.
  [ -f $DB/opencl-nvidia-h200-580.yaml ] || DB=configs/tuned
  F16="--precision f16 --weights f16 --db-dir $DB"
  run f16-warm 150 $F16 --no-decode --steps 2
  sampled f16 90 $F16
  sampled f16-1GiB 120 $F16 --memory-budget 1GiB
  sampled f16-1GiB-pageable 150 $F16 --memory-budget 1GiB --stream-staging pageable
  sampled f16-1.8GB 90 $F16 --memory-budget 1.8GB
  sampled f16-2.6GB 90 $F16 --memory-budget 2.6GB
  run f16-1GiB-profile 150 $F16 --memory-budget 1GiB --profile
  run f32 90 --db-dir $DB
  run f32-4.5GB 90 --db-dir $DB --memory-budget 4.5GB
  peer_and_ablation
fi
if [ "$PHASE" = e ]; then
  # The f16 UNet's costliest op (d's profiles): self-attention at 4096 tokens ran naive
  # (35.5 ms per step), the database having only c1's one point for it. Flash tuned there,
  # then the f16 runs again with that database.
  mkdir -p $DB && cp configs/tuned/*.yaml $DB/
  F16="--precision f16 --weights f16 --db-dir $DB"
  step 150 tune-f16-attention-4096 $S tune --op attention --shape 2x320x1x4096 --attrs heads=8,kv=4096 \
    --storage f16.buffer.nc4hw4 --weights f16 --variant flash --strategy model --seconds 90 --threads 16 \
    --min-ms 5 --llc-mib 60 --sweep-dir build-dev/sweeps --db-dir $DB
  cp $DB/opencl-nvidia-h200-580.yaml "$R/" && cp -r build-dev/sweeps "$R/sweeps"
  sampled f16 90 $F16
  sampled f16-1GiB 120 $F16 --memory-budget 1GiB
  run f16-1GiB-profile 120 $F16 --memory-budget 1GiB --profile --no-decode
  run f16-profile 90 $F16 --profile --no-decode
  run f16-2.6GB 90 $F16 --memory-budget 2.6GB
  run f16-1.8GB 90 $F16 --memory-budget 1.8GB
  finish
fi
if [ "$PHASE" = f ]; then
  # The database lookup with nearest-instance defaults across attributes (tuning/nearest):
  # what the pipeline runs now, f32 and f16, and 1GiB, against visits d and e.
  run f32 90
  run f16 90 --precision f16 --weights f16
  run f16-1GiB 90 --precision f16 --weights f16 --memory-budget 1GiB
  finish
fi
log "unknown phase $PHASE (a, b, c1, c2, d, e or f)"
finish
