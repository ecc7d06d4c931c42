#!/usr/bin/env bash
# One H200 visit for the pipeline (issues #8 and #9), run through the `run` tool:
#   bash scripts/device-pipeline.sh a   (build, tunes, run; ~7 min)
#   bash scripts/device-pipeline.sh b   (ablate; right after a, while the machine is warm)
#   bash scripts/device-pipeline.sh c   (a later visit: VAE convs tuned, the run with the VAE
#                                        profile, and issue #4's checks and GEGLU vs copy)
#   bash scripts/device-pipeline.sh d   (the run and the ablation again, warm-up in setup)
#   bash scripts/device-pipeline.sh e   (the run and the ablation with the database of the
#                                        2026-12-03 tuning visit: D = 80/160 attention, LayerNorm,
#                                        softmax and the helpers tuned, the exhaustive GEMM entry)
# 1. builds sdspeed with the pipeline (tests off: the device image has no ICU/libpng
#    guarantee; the tokenizer and PNG output are then compiled out);
# 2. short random-search tunes of the UNet's heaviest op instances so the tuning
#    database holds conv / GEMM / GroupNorm entries besides attention (every other
#    instance takes the nearest-shape or device-default choice);
# 3. `sdspeed run` of SD 1.5 with seeded random weights at 512x512, 20 steps, --profile;
# 4. `sdspeed ablate` (configs/ablation/paper.yaml) on the same model, 10 steps.
# Every step is capped with timeout so one slow step cannot eat the visit; all output
# lands in $OUT/pipeline.tgz.
set -uo pipefail
PHASE=${1:-a}
source "$(dirname "${BASH_SOURCE[0]}")/device-lib.sh"
# log, pack, step (capped, packed after each), finish, SDSPEED_COMMIT: scripts/device-lib.sh
device_results pipeline-$PHASE
S=build-dev/cli/sdspeed
trap 'pack 2>/dev/null' TERM
if [ "$PHASE" = c ]; then
  # The second visit: VAE decoder convolutions tuned, the run again with the VAE profile,
  # and issue #4's H200 leftovers (checks, flash at 4096, GEGLU against a copy).
  step 150 build bash -c "cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF && cmake --build build-dev -j16 --target sdspeed"
  [ -x $S ] || { tail -40 "$R/build.txt"; finish; }
  git log -1 --format=%H > "$R/device-git.txt" 2>&1
  step 170 tune-vae-conv $S tune --op conv --model configs/models/sd15 --width 512 --height 512 --component vae_decoder \
    --variant winograd_f4x4_3x3,winograd_f6x6_3x3,winograd_f2x2_3x3,im2col_gemm,conv1x1 --storage f32.buffer.nc4hw4 \
    --strategy random --budget 8 --seconds 8 --llc-mib 60
  cp configs/tuned/nvidia-*.yaml "$R/" 2>/dev/null
  mkdir -p "$R/sweeps" && cp -r results/sweeps/nvidia-* "$R/sweeps/" 2>/dev/null
  step 100 run-sd15 $S run --random-weights --model configs/models/sd15 -W 512 -H 512 --steps 20 --profile \
    --report "$R/run-sd15.json"
  # The planner's cost seen in the ablation (94.8 vs 81.8 ms): the same run without it.
  step 45 run-noplanner $S run --random-weights --model configs/models/sd15 -W 512 -H 512 --steps 10 --no-decode --planner none
  step 60 check-h200 $S check --op layernorm,softmax,activation,binary,upsample,concat,reshape,embedding,timestep \
    --points 1 --csv "$R/check-h200.csv"
  step 60 bench-geglu $S bench --op activation --shape 2x2560x1x4096 --attrs fn=geglu --points all --llc-mib 60
  step 30 bench-copy $S bench --op reshape --shape 2x1920x1x4096 --attrs h=1 --points all --llc-mib 60
  finish
fi
if [ "$PHASE" = f ]; then
  step 150 build bash -c "cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF && cmake --build build-dev -j16 --target sdspeed"
  [ -x $S ] || { tail -40 "$R/build.txt"; finish; }
  n=0
  # The profile's costliest GEMM instances (results/pipeline/h200-sd15-512-random.txt).
  for g in "2x320x1x4096 n=2560,epilogue=geglu,bias=1" "2x1280x1x256 n=10240,epilogue=geglu,bias=1" \
           "2x640x1x1024 n=5120,epilogue=geglu,bias=1" "2x1280x1x256 n=1280,bias=0" \
           "2x5120x1x256 n=1280,bias=1,residual=1"; do
    n=$((n + 1)); set -- $g
    step 65 tune-gemm-$n $S tune --op gemm --shape $1 --attrs $2 --storage f32.buffer.nc4hw4 --strategy model \
      --budget 60 --seconds 55 --min-ms 5 --llc-mib 60
  done
  cp configs/tuned/nvidia-*.yaml "$R/"
  cp results/sweeps/opencl-nvidia-h200-580/gemm.csv "$R/gemm.csv"
  step 100 run-sd15 $S run --random-weights --model configs/models/sd15 -W 512 -H 512 --steps 20 --profile \
    --report "$R/run-sd15.json" -o "$R/sd15.png"
  finish
fi
if [ "$PHASE" = d ] || [ "$PHASE" = e ]; then
  # Visit 3: the run and the ablation again with the warm-up run in setup (visit 2 showed
  # the VAE decoder's 2.3 s were one-time costs: its kernels sum to ~60 ms).
  step 150 build bash -c "cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF && cmake --build build-dev -j16 --target sdspeed"
  [ -x $S ] || { tail -40 "$R/build.txt"; finish; }
  step 100 run-sd15 $S run --random-weights --model configs/models/sd15 -W 512 -H 512 --steps 20 --profile \
    --report "$R/run-sd15.json" -o "$R/sd15.png"
  step 300 ablate-sd15 $S ablate --random-weights --model configs/models/sd15 -W 512 -H 512 --steps 10 \
    --out "$R/ablation"
  finish
fi
if [ "$PHASE" = b ]; then
  [ -x $S ] || { log "no build-dev/: run phase a first (same warm machine)"; finish; }
  step 420 ablate-sd15 $S ablate --random-weights --model configs/models/sd15 -W 512 -H 512 --steps 10 \
    --out "$R/ablation"
  finish
fi

step 200 build bash -c "cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF && cmake --build build-dev -j16 --target sdspeed"
[ -x $S ] || { tail -40 "$R/build.txt"; finish; }
$S devices > "$R/devices.txt" 2>&1

if [ -z "${SKIP_TUNE:-}" ]; then
TUNE="--storage f32.buffer.nc4hw4 --strategy random --budget 24 --seconds 12 --llc-mib 60"
step 25 tune-conv-320 $S tune --op conv --shape 2x320x64x64 --attrs cout=320,k=3,pad=1,stride=1,bias=1,temb=0,residual=1 $TUNE
step 25 tune-conv-640 $S tune --op conv --shape 2x640x32x32 --attrs cout=640,k=3,pad=1,stride=1,bias=1,temb=0,residual=1 $TUNE
step 25 tune-conv-1280 $S tune --op conv --shape 2x1280x16x16 --attrs cout=1280,k=3,pad=1,stride=1,bias=1,temb=1,residual=0 $TUNE
step 25 tune-gemm-geglu $S tune --op gemm --shape 2x320x1x4096 --attrs n=2560,epilogue=geglu,bias=1,residual=0 $TUNE
step 25 tune-gemm-ff2 $S tune --op gemm --shape 2x1280x1x4096 --attrs n=320,epilogue=none,bias=1,residual=1 $TUNE
step 25 tune-gemm-q $S tune --op gemm --shape 2x320x1x4096 --attrs n=320,epilogue=none,bias=0,residual=0 $TUNE
step 25 tune-groupnorm $S tune --op groupnorm --shape 2x320x64x64 --attrs g=32,eps=1e-05,silu=1,residual=0 $TUNE
fi
cp configs/tuned/nvidia-*.yaml "$R/" 2>/dev/null
mkdir -p "$R/sweeps" && cp -r results/sweeps/nvidia-* "$R/sweeps/" 2>/dev/null

step 180 run-sd15 $S run --random-weights --model configs/models/sd15 -W 512 -H 512 --steps 20 --profile \
  --report "$R/run-sd15.json" -o "$R/sd15.png" --save-decoded "$R/decoded.safetensors"
rm -f "$R/decoded.safetensors"  # 3 MB: only proves the path works
finish
