#!/usr/bin/env bash
# The H200 visit for weight quantization (issue #20), through the device tool's `run`:
#   git rev-parse --short=12 HEAD > .device-commit   (here, before the visit)
#   bash scripts/device-quant.sh
# One call (~5-7 min on an H200; the caps add up to under 10 min, the device tool's limit):
#   build (build-dev, sdspeed only);
#   the issue's memory targets, SD 1.5 512x512, batch 2 (CFG), 20 DDIM steps, seeded random
#   weights quantized at load, f16 activations: int8 within --memory-budget 1.1GB and int4
#   within 0.75GB (target: peak within the budget and 0 bytes streamed);
#   the UNet iteration time of int8 against f16 weights (f16 activations, no budget,
#   configs/tuned as the default run uses it), 10 steps, no decode.
# Every run warms up each component before timing it (setup, not in the UNet times), so a
# cold program cache costs setup only, never a peak, streamed bytes or a UNet time.
# Results: $OUT/quant.tgz (every run's text and --report JSON, steps.txt, summary.txt),
# repacked (summary rewritten) after each step, so a cap or a lost machine keeps what finished.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device-lib.sh"
device_results quant  # log, pack, step: scripts/device-lib.sh
# Summary: the device high-water mark, bytes streamed per run (all components) and the
# UNet median of every measured run.
summary() {
  python3 - "$R" > "$R/summary.txt" 2>&1 <<'EOF'
import json, os, sys
r = sys.argv[1]
print(f"{'run':<14}{'peak GB':>9}{'peak MiB':>10}{'streamed MiB':>14}{'UNet median ms':>16}  unet budget choices")
for name in ["int8-1.1GB", "int4-0.75GB", "unet-f16", "unet-int8"]:
    p = os.path.join(r, name + ".json")
    if not os.path.exists(p):
        print(f"{name:<14}  (no report: see {name}.txt)")
        continue
    j = json.load(open(p))
    m = j["memory"]
    comps = m.get("components", {})
    streamed = sum(c.get("streamed_bytes_per_run", 0) for c in comps.values())
    choices = "; ".join(comps.get("unet", {}).get("budget_choices", [])) or "-"
    print(f"{name:<14}{m['device_high_water_gb']:>9.3f}{m['device_high_water_bytes'] / 2**20:>10.1f}"
          f"{streamed / 2**20:>14.1f}{j['time_ms']['unet_median']:>16.2f}  {choices}")
EOF
}
pack() { summary; pack_results; }
S=build-dev/cli/sdspeed
SD="--random-weights --model configs/models/sd15 -W 512 -H 512 --scheduler ddim"
run() {  # run NAME CAP ARGS...: one sdspeed run with its JSON report
  local name=$1 cap=$2; shift 2
  step "$cap" "$name" $S run $SD --report "$R/$name.json" -o "$R/$name.png" "$@"
}

if [ ! -x $S ]; then
  step 150 build bash -c "cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF && cmake --build build-dev -j16 --target sdspeed"
  [ -x $S ] || { tail -40 "$R/build.txt"; pack; exit 1; }
fi
$S devices > "$R/devices.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$R/nvidia-smi.txt" 2>&1

# Every run warms each component up before timing it, and a cold program cache costs setup
# only, so no separate warm-up runs: their device time went to the measurements (a
# session's device time is short). Caps allow for the first runs' cold compiles.
# (b) the memory targets
run int8-1.1GB 150 --weights int8 --precision f16 --steps 20 --memory-budget 1.1GB
run int4-0.75GB 120 --weights int4 --precision f16 --steps 20 --memory-budget 0.75GB
# (c) UNet time, int8 vs f16 weights, no budget
run unet-f16 90 --weights f16 --precision f16 --steps 10 --no-decode
run unet-int8 60 --weights int8 --precision f16 --steps 10 --no-decode

log done
pack
cat "$R/summary.txt"
