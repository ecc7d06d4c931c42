#!/usr/bin/env bash
# The H200 visit for the Vulkan backend (issue #21), through the device tool's `run`:
#   here, once: the loader and the build tools as Debian packages (the H200 image has
#   NVIDIA's Vulkan driver but neither the loader nor glslc; /work/.library/device/README.md):
#     echo /.gl/ >> .git/info/exclude; echo /.vk/ >> .git/info/exclude
#     o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
#     mkdir -p .gl .vk /tmp/amd64/partial && apt-get $o update
#     (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
#   (libGLX_nvidia.so.0, NVIDIA's Vulkan ICD, needs libglvnd's libGLdispatch: without it the
#   loader finds "no drivers")
#     (cd .vk && apt-get $o download glslc libshaderc1 libvulkan-dev vulkan-tools \
#        libwayland-client0 libx11-6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0 libffi8)
#   before each visit: git rev-parse --short=12 HEAD > .device-commit
#   optional: bash scripts/dev/carry-binary.sh (after the commit) and carry .bin too: no build there
#   run (carry .gl .vk, and .whl for peer): bash scripts/device-vulkan.sh [STAGE...], the stages
#   check coopmat coopmat-full bench splitk warmup staging tiles flash flash2 ksweep epi tiles2 wide taps gn ln gemv gemm-peer run race peer stamps barriers wino nontc ab tune setup ablate (none: check coopmat coopmat-full bench)
# libvulkan1 goes into / (the README's rule for loaders); the rest into /opt/vk, since
# unpacking other packages into / can break the image.
# What it does (~5 min; each step capped so that a hang keeps what finished):
#   vulkaninfo (full and --summary) and `sdspeed devices` (cooperative-matrix shapes);
#   a build with the Vulkan backend (build-dev, sdspeed only);
#   `sdspeed check --backend vulkan` of every family, f32 and f16 storage and arithmetic;
#   then gemm coopmat_f16 (tensor cores, issue #22) on every weight format and SD 1.5's sizes,
#   and conv coopmat_f16 (the implicit GEMM on tensor cores) likewise;
#   and attention flash_coopmat_f16 (checked at SD 1.5's head sizes, timed against flash_f16);
#   `run` instead: SD 1.5 512x512 through OpenCL f32, Vulkan f32 and Vulkan f16 arithmetic
#   (#21's targets), the UNet medians and decoded-image PSNRs in summary.txt (~7 min; the
#   build is reused when the machine is still warm from a `check` call).
#   `tiles` instead: the coopmat shaders' uvec4 tiles against the tiles before them (the
#   reverse of the carried .device-old.patch, built beside), checks, benches and the race
#   command each way, in one call (~7 min).
#   `flash` instead: attention flash_coopmat_f16 checked and benched against flash_f16, and
#   the race command with each and the tensor-core run's profile (results/vulkan/flash1/;
#   FLASH_OPENCL=0 skips OpenCL f32); `wide`: the 64x64 warp tiles
#   and gemm split-K checked on tensor cores and benched at SD 1.5's shapes (~4 min each).
#   `taps` instead: conv coopmat_f16's tap-major K (kernels/conv/README.md) checked on tensor
#   cores, benched at SD 1.5's UNet and VAE convolutions against the channel-major gather it
#   replaces (SDSPEED_VK_CONV_CHANNEL_MAJOR=1, same build), the race command each way
#   (TAPS_OPENCL=1: OpenCL f32 too, for the PSNR) and its profile (~5 min). `nontc`: #21's
#   two Vulkan runs without tensor cores (f32 Winograd, f16 arithmetic on im2col_gemm_f16 /
#   tiled_f16) beside OpenCL f32 (~2 min). `gn`: groupnorm two_pass_f16 (Vulkan since session
#   38) checked and benched against one_pass_f16 at SD 1.5's GroupNorm shapes (the VAE's
#   first), then the race command with it named for every GroupNorm and its profile (~3 min;
#   not yet run).
#   `ln`: layernorm/softmax split and split_f16 (session 45) checked on the GPU, LayerNorm
#   benched against cooperative_f16 at SD 1.5's five instances, GroupNorm two_pass_f16's
#   NC4HW4 slices against its per-element form (SDSPEED_VK_GN_PER_ELEMENT=1), and the race
#   command before both, with the slices, and with split_f16 too (~5 min).
#   `barriers` (session 47): the race command with the barriers a span-only run leaves out
#   and with a barrier before every dispatch (SDSPEED_VK_BARRIER_EVERY_DISPATCH=1), twice
#   each, interleaved; their decoded images compared element by element (barriers-diff.txt,
#   with each run's UNet dispatch and barrier counts; ~2.5 min).
#   `setup` instead: issue #22's setup target (<= 5 s with a warm pipeline cache, the weights
#   read from an f16 safetensors file): SD 1.5's seeded weights written once as an f16
#   checkpoint folder (`sdspeed quantize --random-weights --weights f16`, /tmp/sd15-f16, kept
#   while the machine is warm), then the f16 command of `run` loading it, twice: the first
#   fills the pipeline cache and the page cache, the second is the measurement (its report's
#   setup_wall: every component's load, pipelines, upload and warm-up); setup.txt (~3 min).
#   `ablate` instead: configs/ablation/vulkan.yaml (issue #22: the paper's rows on Vulkan,
#   + f16 arithmetic, + tensor cores) on SD 1.5 512x512, 3 steps per row (ablate's PNDM;
#   the UNet median per iteration is what the table compares; ~3.5 min on an H100). Its
#   table in ablation-vulkan/ablation.md, to copy to
#   results/ablation/vulkan-<device key>/ (last: vulkan-nvidia-h100-580).
# Results: $OUT/vulkan.tgz, repacked after each step.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device-lib.sh"
device_results vulkan  # log, pack, step: scripts/device-lib.sh
# The stages to run, in this file's order, whatever order they are named in (none: check
# coopmat coopmat-full bench). Run the script once per stage for another order: the build,
# the results folder and its archive carry over.
STAGES=" ${*:-check coopmat coopmat-full bench} "
for s in $STAGES; do
  case $s in check|coopmat|coopmat-full|bench|splitk|warmup|staging|tiles|flash|flash2|ksweep|epi|tiles2|wide|taps|gn|ln|gemv|gemm-peer|run|race|peer|stamps|barriers|wino|nontc|ab|tune|setup|ablate) ;;
    *) echo "device-vulkan.sh: unknown stage '$s' (check coopmat coopmat-full bench splitk warmup staging tiles flash flash2 ksweep epi tiles2 wide taps gn ln gemv gemm-peer run race peer stamps barriers wino nontc ab tune setup ablate)" >&2; exit 2;;
  esac
done
want() { [[ $STAGES == *" $1 "* ]]; }
echo "commit ${SDSPEED_COMMIT:-unknown}" > "$R/commit.txt"

# The loader into /, the build tools beside it.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
mkdir -p /opt/vk
for f in .vk/*.deb; do dpkg -x "$f" /opt/vk; done
export PATH=/opt/vk/usr/bin:$PATH
export LD_LIBRARY_PATH=/opt/vk/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f $icd ] && export VK_DRIVER_FILES=$icd
env | grep -E '^VK_|^LD_LIBRARY' > "$R/env.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$R/nvidia-smi.txt" 2>&1
step 30 vulkaninfo-summary vulkaninfo --summary
step 60 vulkaninfo vulkaninfo

S=build-dev/cli/sdspeed
# A binary built here and carried (scripts/dev/carry-binary.sh: .bin/sdspeed, the Debian
# libraries it links that the image lacks, and the commit it was built at) saves a cold
# machine's build (150 to 240 s of device time). The GPU code is the same either way: the
# OpenCL sources are embedded and the SPIR-V comes from the same Debian glslc; only the host
# compiler differs (Debian's g++ 12 here, the image's g++ 13 there). If it does not run
# there (`devices` finds no Vulkan device), the build below makes one as before.
if [ -x .bin/sdspeed ] && [ ! -x $S ] && [ "$(cat .bin/commit 2>/dev/null)" = "${SDSPEED_COMMIT:-}" ]; then
  mkdir -p /opt/binlibs build-dev/cli
  for f in .bin/*.deb; do dpkg -x "$f" /opt/binlibs; done
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/opt/binlibs/usr/lib/x86_64-linux-gnu
  cp .bin/sdspeed $S && log "carried binary of $(cat .bin/commit) (built with $(cat .bin/compiler 2>/dev/null))"
fi
if [ ! -x $S ] || ! $S devices 2>/dev/null | grep -q vulkan:; then
  step 240 build bash -c "cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF \
    -DVulkan_INCLUDE_DIR=/opt/vk/usr/include -DVulkan_LIBRARY=/usr/lib/x86_64-linux-gnu/libvulkan.so.1 \
    -DSDSPEED_GLSLC=/opt/vk/usr/bin/glslc && cmake --build build-dev -j16 --target sdspeed"
  [ -x $S ] || { tail -40 "$R/build.txt"; pack; exit 1; }
fi
step 60 devices $S devices
SD="--random-weights --model configs/models/sd15 -W 512 -H 512 --scheduler ddim --steps 5"
sd_run() {  # sd_run NAME CAP ARGS...: one SD 1.5 run, its report, image and decoded tensor in $R
  local name=$1 cap=$2; shift 2
  step "$cap" "$name" $S run $SD --report "$R/$name.json" -o "$R/$name.png" --save-decoded "$R/$name.safetensors" "$@"
}
summarize() {  # UNet medians, peaks and decoded-image PSNRs of every run-*.json in $R: summary.txt
  python3 - "$R" > "$R/summary.txt" 2>&1 <<'PY'
import json, os, sys
import numpy as np
sys.path.insert(0, "scripts")
from device_decoded import decoded as read_decoded
r = sys.argv[1]
def decoded(name):
    d = read_decoded(r, name)
    return None if d is None else d.astype(np.float64)
def psnr(a, b):
    if a is None or b is None: return "-"
    m = np.mean((a - b) ** 2); return "inf" if m == 0 else f"{10 * np.log10(4 / m):.1f}"
runs = sorted(f[:-5] for f in os.listdir(r) if f.startswith("run-") and f.endswith(".json"))
img = {n: decoded(n) for n in runs}
print(f"{'run':<22}{'UNet median ms':>16}{'UNet min ms':>13}{'text enc ms':>12}{'VAE ms':>9}{'total ms':>10}"
      f"{'peak GB':>9}  PSNR vs vulkan-f32 / opencl-f32 (dB)")
for n in runs:
    j = json.load(open(os.path.join(r, n + ".json"))); t = j["time_ms"]
    print(f"{n:<22}{t['unet_median']:>16.2f}{t['unet_min']:>13.2f}{t['text_encoder']:>12.2f}{t['vae_decoder']:>9.2f}"
          f"{t['total_device']:>10.1f}{j['memory']['device_high_water_gb']:>9.3f}  "
          f"{psnr(img[n], img.get('run-vulkan-f32'))} / {psnr(img[n], img.get('run-opencl-f32'))}")
PY
  cat "$R/summary.txt"
}

# The device's ceilings through Vulkan (copy GB/s, fp32 FMA rate, and the fixed cost of a
# dispatch with a barrier and timestamps, the barrier alone, and neither), into
# $R/devices/<key>.yaml, to check in as configs/devices/ (bench's % of ceiling); ~10 s.
want check && step 60 roofline $S roofline --backend vulkan --devices-dir "$R/devices"
# Every family through Vulkan on the H200 (the lavapipe command of results/vulkan/README.md).
want check && step 240 check $S check --backend vulkan --arithmetic f32,f16 \
  --storage f32.buffer.nchw,f32.buffer.nc4hw4,f16.buffer.nchw,f16.buffer.nc4hw4 \
  --csv "$R/check.csv"
want check && tail -5 "$R/check.txt"
# gemm coopmat_f16 (issue #22, tensor cores through VK_NV_cooperative_matrix): its first
# run on cooperative-matrix hardware (kernels/gemm/README.md): the quick problems at more
# sampled points than the check above, every weight format; then SD 1.5's sizes (--full:
# double-precision references of up to 27 GFLOP each, so one format and the defaults).
want coopmat && step 150 check-coopmat $S check --backend vulkan --op gemm --variant coopmat_f16 \
  --arithmetic f16 --storage f32.buffer.nchw,f16.buffer.nchw,f16.buffer.nc4hw4 --weights f32,f16,int8,int4 \
  --points 6 --csv "$R/check-coopmat.csv"
want coopmat-full && step 240 check-coopmat-full $S check --backend vulkan --op gemm --variant coopmat_f16 \
  --arithmetic f16 --storage f16.buffer.nchw --weights f16 --points 0 --full --csv "$R/check-coopmat-full.csv"
# Its time against direct_f16 on the issue's GEGLU (2x320x1x4096, n = 2560), f16 storage
# and weights, 8 sampled points each (every timed point passes the accuracy check first).
want bench && step 180 bench-coopmat $S bench --backend vulkan --op gemm --shape 2x320x1x4096 \
  --attrs n=2560,epilogue=geglu,bias=1,residual=0 --variant coopmat_f16,direct_f16 --arithmetic f16 \
  --storage f16.buffer.nchw --weights f16 --points 8 --llc-mib 60 --csv "$R/bench-coopmat.csv"
# conv coopmat_f16 (issue #22: the implicit GEMM of im2col_gemm / conv1x1 on tensor cores,
# kernels/conv/README.md): its first run on cooperative-matrix hardware, the quick problems
# (3x3 at stride 1 and 2, 1x1, every epilogue) at sampled points and every weight format;
# then SD 1.5 UNet shapes (ResNet conv1 + temb at 64x64 and 16x16, a 1x1, a stride-2
# downsample; not --full: its VAE layers at 512x512 need ~100 GFLOP double references);
# then its time against im2col_gemm_f16 on ResNet conv1 at 64x64 latents.
want coopmat && step 150 check-conv-coopmat $S check --backend vulkan --op conv --variant coopmat_f16 \
  --arithmetic f16 --storage f32.buffer.nchw,f16.buffer.nchw,f16.buffer.nc4hw4 --weights f32,f16,int8,int4 \
  --points 6 --csv "$R/check-conv-coopmat.csv"
if want coopmat-full; then
  i=0
  for shape_attrs in 2x320x64x64:cout=320,temb=1 2x1280x16x16:cout=1280,temb=1 2x640x32x32:cout=640,k=1 \
                     2x320x64x64:cout=320,stride=2; do
    i=$((i + 1))
    step 240 check-conv-coopmat-sd$i $S check --backend vulkan --op conv --variant coopmat_f16 --arithmetic f16 \
      --storage f16.buffer.nchw --weights f16 --points 0 --shape "${shape_attrs%%:*}" --attrs "${shape_attrs#*:}" \
      --csv "$R/check-conv-coopmat-sd$i.csv"
  done
fi
want bench && step 180 bench-conv-coopmat $S bench --backend vulkan --op conv --shape 2x320x64x64 \
  --attrs cout=320,temb=1 --variant coopmat_f16,im2col_gemm_f16 --arithmetic f16 \
  --storage f16.buffer.nchw --weights f16 --points 8 --llc-mib 60 --csv "$R/bench-conv-coopmat.csv"
# attention flash_coopmat_f16 (issue #22, FlashAttention on tensor cores): its first run on
# coopmat hardware (kernels/attention/README.md), the quick problems at sampled points,
# then SD 1.5's sizes (--full at the defaults, fitted to each problem since session 43: D =
# 40, 80, 160 and 512 are each checked at the point an untuned run takes), the VAE's size
# again at DO = 128,
# and its time against flash_f16 at S = L = 4096, D = 40.
want coopmat && step 100 check-attn-coopmat $S check --backend vulkan --op attention \
  --variant flash_coopmat_f16 --arithmetic f16 --storage f32.buffer.nchw,f16.buffer.nc4hw4 --points 6 \
  --csv "$R/check-attn-coopmat.csv"
want coopmat-full && step 240 check-attn-coopmat-full $S check --backend vulkan --op attention \
  --variant flash_coopmat_f16 --arithmetic f16 --storage f16.buffer.nchw --points 0 --full \
  --csv "$R/check-attn-coopmat-full.csv"
want coopmat-full && step 120 check-attn-coopmat-vae $S check --backend vulkan --op attention \
  --variant flash_coopmat_f16 --arithmetic f16 --storage f16.buffer.nchw --params DO=128 --points 0 \
  --shape 1x512x1x4096 --attrs heads=1 --csv "$R/check-attn-coopmat-vae.csv"
want bench && step 180 bench-attn-coopmat $S bench --backend vulkan --op attention \
  --shape 2x320x1x4096 --attrs heads=8 --variant flash_coopmat_f16,flash_f16 --arithmetic f16 \
  --storage f16.buffer.nchw --points 8 --csv "$R/bench-attn-coopmat.csv"
if want coopmat || want coopmat-full || want bench; then  # this call's checks and benches
  for f in check-coopmat check-coopmat-full bench-coopmat check-conv-coopmat check-conv-coopmat-sd1 \
           check-conv-coopmat-sd2 check-conv-coopmat-sd3 check-conv-coopmat-sd4 bench-conv-coopmat \
           check-attn-coopmat check-attn-coopmat-full check-attn-coopmat-vae bench-attn-coopmat; do
    [ -f "$R/$f.txt" ] && tail -5 "$R/$f.txt"
  done
fi

if want splitk; then
  # conv coopmat_f16's split-K (SK, kernels/conv/README.md): first on tensor cores, so the
  # quick problems checked at SK = 2, 4 and 16 (the sampled points of the coopmat stage
  # may miss SK > 1), then the time of SD 1.5's 2x1280x8x8 3x3 conv (the profile's first
  # conv: K = 11520, 40 output tiles at the defaults) at each SK, f16 NC4HW4 as the race runs.
  for sk in 2 4 16; do
    step 120 check-conv-splitk$sk $S check --backend vulkan --op conv --variant coopmat_f16 --arithmetic f16 \
      --storage f16.buffer.nchw,f16.buffer.nc4hw4 --weights f16,int8 --params SK=$sk --csv "$R/check-conv-splitk$sk.csv"
    tail -2 "$R/check-conv-splitk$sk.txt"
  done
  for sk in 1 2 4 8 16; do
    step 60 bench-conv-splitk$sk $S bench --backend vulkan --op conv --shape 2x1280x8x8 \
      --attrs cout=1280,residual=1 --variant coopmat_f16 --arithmetic f16 --storage f16.buffer.nc4hw4 \
      --weights f16 --params SK=$sk --llc-mib 60 --csv "$R/bench-conv-splitk$sk.csv"
    grep -E "^conv" "$R/bench-conv-splitk$sk.txt"
  done
  pack
fi
if want warmup; then
  # The timed warm-up (runtime/timing.h, --warmup-ms): the same two ops, each after 4 s of
  # idle, at each --warmup-ms of WARMUP_MS (default "0 100 400 default": three counted
  # warm-up runs only, as before 3177f53; 100 and 400 ms; the default, 1000 ms), with the
  # SM clock sampled every 100 ms beside them (clocks.csv); the race stage's profile gives
  # the same instances' time inside a model run to compare with.
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu,power.draw --format=csv -lms 100 \
    > "$R/clocks.csv" 2>&1 &
  SMI=$!
  for ms in ${WARMUP_MS:-0 100 400 default}; do
    W="--warmup-ms $ms"
    [ "$ms" = default ] && W=
    sleep 4
    step 60 warmup-attn-$ms $S bench --backend vulkan --op attention --shape 2x320x1x4096 --attrs heads=8 \
      --variant flash_f16 --arithmetic f16 --storage f16.buffer.nc4hw4 --llc-mib 60 $W
    sleep 4
    step 60 warmup-conv-$ms $S bench --backend vulkan --op conv --shape 2x1280x8x8 --attrs cout=1280,residual=1 \
      --variant coopmat_f16 --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --llc-mib 60 $W
    grep -hE "^(attention|conv) " "$R/warmup-attn-$ms.txt" "$R/warmup-conv-$ms.txt" | sed "s/^/warmup-ms $ms: /"
  done
  kill $SMI 2>/dev/null
  pack
fi
if want staging; then
  # The coopmat shaders' vector staging (gemm_coopmat.comp's AVEC / BVEC, conv_coopmat.comp's
  # BVEC): first on tensor cores, the quick gemm problems with f16 weights in both layouts
  # (HW % 4 == 0 and K % 8 == 0 among them) and a conv with Cin % 8 == 0; then, in this
  # call, the same ops and the race command with SDSPEED_VK_SCALAR_STAGING=1 (the per-element
  # staging before it) and without (every bench checks its point against Eigen first).
  step 100 check-staging-gemm $S check --backend vulkan --op gemm --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nchw,f16.buffer.nc4hw4,f32.buffer.nc4hw4 --weights f16 --points 4 --csv "$R/check-staging-gemm.csv"
  step 100 check-staging-conv $S check --backend vulkan --op conv --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nchw,f16.buffer.nc4hw4 --weights f16 --points 4 --shape 2x64x12x10 \
    --attrs cout=72,temb=1 --csv "$R/check-staging-conv.csv"
  tail -3 "$R/check-staging-gemm.txt" "$R/check-staging-conv.txt"
  for mode in scalar vector; do
    if [ $mode = scalar ]; then export SDSPEED_VK_SCALAR_STAGING=1; else unset SDSPEED_VK_SCALAR_STAGING; fi
    B="$S bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --llc-mib 60"
    step 60 staging-geglu-$mode $B --op gemm --shape 2x320x1x4096 --attrs n=2560,epilogue=geglu,bias=1,residual=0 \
      --variant coopmat_f16
    step 60 staging-gemm-$mode $B --op gemm --shape 2x320x1x4096 --attrs n=320,epilogue=none,bias=0,residual=0 \
      --variant coopmat_f16
    step 90 staging-conv-$mode $B --op conv --shape 2x640x32x32 --attrs cout=640,residual=1 --variant coopmat_f16
    grep -hE "^(gemm|conv) " "$R/staging-geglu-$mode.txt" "$R/staging-gemm-$mode.txt" "$R/staging-conv-$mode.txt" | sed "s/^/$mode: /"
    sd_run run-vulkan-f16-staging-$mode 150 --backend vulkan --arithmetic f16 --precision f16 --weights f16
  done
  summarize
  step 120 profile-vulkan-f16-staging $S run $SD --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
    --profile --no-decode --report "$R/profile-vulkan-f16-staging.json"
  pack
fi
if want tiles; then
  # The coopmat shaders' uvec4 tiles (kernels/common/coopmat_tiles.glsl) against the f16
  # tiles before them, in one call: .device-old.patch (carried: `git diff BASE -- kernels
  # > .device-old.patch` here, BASE the commit before the change) is applied in reverse to
  # a copy of the tree, built beside build-dev; then the new shaders' checks on tensor
  # cores (both layouts, f16 weights and int8, split-K), then the same benches (each point
  # checked against Eigen first) and the race command, old then new, and the new profile.
  O=/tmp/old
  if [ ! -x $O/build-dev/cli/sdspeed ]; then
    rm -rf $O && mkdir -p $O && tar --exclude=./build-dev --exclude=./.gl --exclude=./.vk --exclude=./.whl -cf - . | tar -C $O -xf -
    (cd $O && patch -R -p1 -s < .device-old.patch) > "$R/old-patch.txt" 2>&1 || { cat "$R/old-patch.txt"; pack; exit 1; }
    step 240 build-old bash -c "cd $O && cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF \
      -DVulkan_INCLUDE_DIR=/opt/vk/usr/include -DVulkan_LIBRARY=/usr/lib/x86_64-linux-gnu/libvulkan.so.1 \
      -DSDSPEED_GLSLC=/opt/vk/usr/bin/glslc && cmake --build build-dev -j16 --target sdspeed"
  fi
  step 100 check-tiles-gemm $S check --backend vulkan --op gemm --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nchw,f16.buffer.nc4hw4,f32.buffer.nc4hw4 --weights f16,int8 --points 4 --csv "$R/check-tiles-gemm.csv"
  step 100 check-tiles-conv $S check --backend vulkan --op conv --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nchw,f16.buffer.nc4hw4 --weights f16,int8 --points 4 --csv "$R/check-tiles-conv.csv"
  step 100 check-tiles-splitk $S check --backend vulkan --op conv --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nc4hw4 --weights f16 --params SK=4 --csv "$R/check-tiles-splitk.csv"
  tail -2 "$R/check-tiles-gemm.txt" "$R/check-tiles-conv.txt" "$R/check-tiles-splitk.txt"
  sd_run run-opencl-f32 150  # the image both PSNRs compare against
  for mode in old new; do
    X=$S; [ $mode = old ] && X=$O/build-dev/cli/sdspeed
    B="$X bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --llc-mib 60"
    step 60 tiles-geglu-$mode $B --op gemm --shape 2x320x1x4096 --attrs n=2560,epilogue=geglu,bias=1,residual=0 \
      --variant coopmat_f16
    step 60 tiles-gemm-$mode $B --op gemm --shape 2x320x1x4096 --attrs n=320,epilogue=none,bias=0,residual=0 \
      --variant coopmat_f16
    step 60 tiles-gemv-$mode $B --op gemm --shape 2x1280x1x1 --attrs n=1280,epilogue=none,bias=1,residual=0 \
      --variant coopmat_f16
    step 60 tiles-gemm256-$mode $B --op gemm --shape 2x1280x1x256 --attrs n=1280,epilogue=none,bias=0,residual=0 \
      --variant coopmat_f16
    step 90 tiles-conv-$mode $B --op conv --shape 2x640x32x32 --attrs cout=640,residual=1 --variant coopmat_f16
    grep -hE "^(gemm|conv) " "$R"/tiles-*-$mode.txt | sed "s/^/$mode: /"
    step 150 run-vulkan-f16-tiles-$mode $X run $SD --report "$R/run-vulkan-f16-tiles-$mode.json" \
      -o "$R/run-vulkan-f16-tiles-$mode.png" --save-decoded "$R/run-vulkan-f16-tiles-$mode.safetensors" \
      --backend vulkan --arithmetic f16 --precision f16 --weights f16
  done
  summarize
  step 120 profile-vulkan-f16-tiles $S run $SD --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
    --profile --no-decode --report "$R/profile-vulkan-f16-tiles.json"
  step 60 kernels-tiles env SDSPEED_VK_PIPELINE_STATS=1 $S check --backend vulkan --op gemm \
    --variant coopmat_f16 --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --points 0 \
    --shape 2x320x1x4096 --attrs n=320 --dump-kernels "$R/kernels-tiles"
  pack
fi
# attention flash_coopmat_f16 on tensor cores: the quick problems at sampled points in both
# storage formats, and SD 1.5's sizes at the declared defaults (stages flash, flash2).
flash_checks() {
  step 100 check-flash $S check --backend vulkan --op attention --variant flash_coopmat_f16 --arithmetic f16 \
    --storage f32.buffer.nchw,f16.buffer.nc4hw4 --points 6 --csv "$R/check-flash.csv"
  step 120 check-flash-full $S check --backend vulkan --op attention --variant flash_coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nc4hw4 --points 0 --full --csv "$R/check-flash-full.csv"
}
# Both f16 attention variants at SD 1.5's attention shapes, one bench a shape (each computes
# its reference once), sampled points of both: flash.txt.
flash_benches() {
  B="$S bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --llc-mib 60"
  step 120 flash-4096 $B --op attention --shape 2x320x1x4096 --attrs heads=8 --variant flash_coopmat_f16,flash_f16 --points 6
  step 30 flash-cross $B --op attention --shape 2x320x1x4096 --attrs heads=8,kv=77 --variant flash_coopmat_f16,flash_f16
  step 60 flash-1024 $B --op attention --shape 2x640x1x1024 --attrs heads=8 --variant flash_coopmat_f16,flash_f16 --points 4
  step 60 flash-256 $B --op attention --shape 2x1280x1x256 --attrs heads=8 --variant flash_coopmat_f16,flash_f16 --points 4
  step 120 flash-vae $B --op attention --shape 1x512x1x4096 --attrs heads=1 --variant flash_coopmat_f16,flash_f16 --points 4
  grep -hE "^attention " "$R"/flash-*.txt > "$R/flash.txt"; cat "$R/flash.txt"
}
if want flash; then
  # attention flash_coopmat_f16's one-pass shader (session 39: O in registers, rescaled only
  # when a row's reference max moves past RT): checked on tensor cores (quick problems at
  # sampled points, SD 1.5's sizes at the declared defaults, the VAE's D = 512 at fitted
  # points), benched against flash_f16 at SD 1.5's attention shapes (defaults and sampled
  # points), then the race command with attention on tensor cores beside the default
  # order, OpenCL f32 for both PSNRs, and the tensor-core run's profile.
  flash_checks
  step 100 check-flash-vae $S check --backend vulkan --op attention --variant flash_coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nc4hw4 --points 0 --params DO=128,SG=1 --shape 1x512x1x4096 --attrs heads=1 --csv "$R/check-flash-vae.csv"
  tail -qn 1 "$R"/check-flash*.txt
  flash_benches
  [ "${FLASH_OPENCL:-1}" = 1 ] && sd_run run-opencl-f32 150
  sd_run run-vulkan-f16-race 100 --backend vulkan --arithmetic f16 --precision f16 --weights f16
  sd_run run-vulkan-f16-flashtc 100 --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
    --variant attention=flash_coopmat_f16
  summarize
  step 120 profile-vulkan-f16-flashtc $S run $SD --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
    --variant attention=flash_coopmat_f16 --profile --no-decode --report "$R/profile-vulkan-f16-flashtc.json"
  # Both f16 attention pipelines' driver statistics (registers, spills) at SD 1.5's
  # 4096-token self-attention: what limits flash_coopmat_f16's occupancy there.
  step 90 kernels-attention env SDSPEED_VK_PIPELINE_STATS=1 $S check --backend vulkan --op attention \
    --variant flash_coopmat_f16,flash_f16 --arithmetic f16 --storage f16.buffer.nc4hw4 --points 0 \
    --shape 2x320x1x4096 --attrs heads=8 --dump-kernels "$R/kernels-attention"
  # #22's 20-step target with the faster attention of the two runs above.
  faster=$(python3 -c "import json,sys; t=[json.load(open(f))['time_ms']['unet_median'] for f in sys.argv[1:]]; print(int(t[1] < t[0]))" \
    "$R/run-vulkan-f16-race.json" "$R/run-vulkan-f16-flashtc.json" 2>/dev/null || echo 0)
  [ "$faster" = 1 ] && attn=(--variant attention=flash_coopmat_f16) || attn=()
  step 150 steps20-vulkan-f16 $S run ${SD/--steps 5/--steps 20} --backend vulkan --arithmetic f16 --precision f16 \
    --weights f16 ${attn[@]+"${attn[@]}"} --report "$R/steps20-vulkan-f16.json" -o "$R/steps20-vulkan-f16.png"
  grep -E "UNet / step|total \(device\)|VAE decoder  " "$R/steps20-vulkan-f16.txt"
  pack
fi
if want flash2; then
  # Session 40: flash_coopmat_f16's staging software-pipelined through registers (each K
  # chunk's or V tile's successor loaded right after it is stored; LAYOUT a constant):
  # checked on tensor cores, benched against flash_f16 at SD 1.5's attention shapes, its
  # driver statistics at the 4096-token self-attention.
  flash_checks
  tail -qn 1 "$R"/check-flash*.txt
  flash_benches
  step 90 kernels-attention env SDSPEED_VK_PIPELINE_STATS=1 $S check --backend vulkan --op attention \
    --variant flash_coopmat_f16 --arithmetic f16 --storage f16.buffer.nc4hw4 --points 0 \
    --shape 2x320x1x4096 --attrs heads=8 --dump-kernels "$R/kernels-attention"
  pack
fi
if want ksweep; then
  # Where gemm coopmat_f16's time goes: the same 2x4096-position, n = 320 GEMM at K = 8
  # (one K step: launch, tile setup and the epilogue), 64, 320, 1280 and 2560 (the slope is
  # a K step's cost), at the default point and at KS = 64; plus its driver statistics.
  B="$S bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --llc-mib 60 --variant coopmat_f16"
  for k in 8 64 320 1280 2560; do
    step 30 ksweep-$k $B --op gemm --shape 2x${k}x1x4096 --attrs n=320,epilogue=none,bias=0,residual=0 --params SK=1
    step 30 ksweep64-$k $B --op gemm --shape 2x${k}x1x4096 --attrs n=320,epilogue=none,bias=0,residual=0 --params SK=1,KS=64
  done
  grep -hE "^gemm " "$R"/ksweep*.txt > "$R/ksweep.txt"; cat "$R/ksweep.txt"
  step 90 kernels-gemm env SDSPEED_VK_PIPELINE_STATS=1 $S check --backend vulkan --op gemm \
    --variant coopmat_f16 --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --points 0 \
    --shape 2x320x1x4096 --attrs n=320,epilogue=none,bias=0,residual=0 --dump-kernels "$R/kernels-gemm"
  pack
fi
if want epi; then
  # Session 40: the coopmat GEMM's and convolution's epilogue through a work-group C tile in
  # shared memory (over the staging tiles, in passes where it does not fit), 4 channels of a
  # position an invocation under NC4HW4. Checked on tensor cores (every storage, f16 and
  # int8 weights, sampled points; SD 1.5's Linear sizes; the conv quick problems and split-K),
  # then benched at the ksweep GEMMs and SD 1.5's heaviest conv and GEMM shapes.
  step 150 check-epi-gemm $S check --backend vulkan --op gemm --variant coopmat_f16 --arithmetic f16 \
    --storage f32.buffer.nchw,f16.buffer.nchw,f16.buffer.nc4hw4 --weights f16,int8 --points 4 --csv "$R/check-epi-gemm.csv"
  step 150 check-epi-gemm-wide $S check --backend vulkan --op gemm --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nc4hw4 --weights f16 --params WM=4,WN=4 --csv "$R/check-epi-gemm-wide.csv"
  step 150 check-epi-conv $S check --backend vulkan --op conv --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nchw,f16.buffer.nc4hw4 --weights f16,int8 --points 3 --csv "$R/check-epi-conv.csv"
  step 150 check-epi-conv-wide $S check --backend vulkan --op conv --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nc4hw4 --weights f16 --params WM=4,WN=4,SK=2 --csv "$R/check-epi-conv-wide.csv"
  step 240 check-epi-gemm-full $S check --backend vulkan --op gemm --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nc4hw4 --weights f16 --points 0 --full --csv "$R/check-epi-gemm-full.csv"
  tail -qn 1 "$R"/check-epi-*.txt
  B="$S bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --llc-mib 60 --variant coopmat_f16"
  for k in 8 320 1280; do
    step 30 epi-k$k $B --op gemm --shape 2x${k}x1x4096 --attrs n=320,epilogue=none,bias=0,residual=0 --params SK=1
  done
  step 30 epi-tiny $B --op gemm --shape 1x8x1x1 --attrs n=16,epilogue=none,bias=0,residual=0 --params SK=1
  step 40 epi-geglu $B --op gemm --shape 2x320x1x4096 --attrs n=2560,epilogue=geglu,bias=1,residual=0
  step 40 epi-res $B --op gemm --shape 2x1280x1x4096 --attrs n=320,epilogue=none,bias=1,residual=1
  step 40 epi-conv320 $B --op conv --shape 2x320x64x64 --attrs cout=320,residual=1
  step 40 epi-conv640 $B --op conv --shape 2x640x32x32 --attrs cout=640,residual=1
  step 40 epi-conv1280 $B --op conv --shape 2x1280x16x16 --attrs cout=1280,residual=1
  step 60 epi-convvae $B --op conv --shape 1x128x512x512 --attrs cout=128,residual=1
  grep -hE "^(gemm|conv) " "$R"/epi-*.txt > "$R/epi.txt"; cat "$R/epi.txt"
  pack
fi
if want tiles2; then
  # Session 40: larger work-group tiles at the 64x64-tile defaults' register count (WM = WN
  # = 2): 64x64 tiles re-read A and B from L2 at ~3.3 TB/s aggregate in the ksweep GEMM
  # (8 KB a 32-deep step per work-group, results/vulkan/flash2/). 128 x 64, 64 x 128 and
  # 128 x 128 against the defaults at SD 1.5's heaviest GEMM and conv shapes (each point
  # checked first).
  B="$S bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --llc-mib 60 --variant coopmat_f16"
  i=0
  # TILES2_POINTS: the points (default: the four SGM x SGN below at 32x32 warp tiles).
  for pt in ${TILES2_POINTS:-SGM=2,SGN=2 SGM=4,SGN=2 SGM=2,SGN=4 SGM=4,SGN=4}; do
    i=$((i + 1))
    step 40 tiles2-conv320-$i $B --op conv --shape 2x320x64x64 --attrs cout=320,residual=1 --params $pt,SK=1
    step 40 tiles2-conv640-$i $B --op conv --shape 2x640x32x32 --attrs cout=640,residual=1 --params $pt,SK=1
    step 40 tiles2-conv1280-$i $B --op conv --shape 2x1280x16x16 --attrs cout=1280,residual=1 --params $pt,SK=2
    step 40 tiles2-gemm-$i $B --op gemm --shape 2x320x1x4096 --attrs n=320,epilogue=none,bias=0,residual=0 --params $pt,SK=1
    step 40 tiles2-geglu-$i $B --op gemm --shape 2x320x1x4096 --attrs n=2560,epilogue=geglu,bias=1,residual=0 --params $pt,SK=1
    step 40 tiles2-ff-$i $B --op gemm --shape 2x5120x1x256 --attrs n=1280,epilogue=none,bias=1,residual=1 --params $pt,SK=1
    # The VAE decoder's heaviest convolutions (512x512 and 256x256 at 128 / 256 channels).
    step 60 tiles2-vae128-$i $B --op conv --shape 1x128x512x512 --attrs cout=128,residual=1 --params $pt,SK=1
    step 60 tiles2-vae256-$i $B --op conv --shape 1x256x256x256 --attrs cout=256,residual=1 --params $pt,SK=1
  done
  grep -hE "^(gemm|conv) " "$R"/tiles2-*.txt > "$R/tiles2.txt"; cat "$R/tiles2.txt"
  pack
fi
if want wide; then
  # The coopmat warp tiles past 32x32 (WM * WN up to 16: a 64x64 warp tile), checked on
  # tensor cores over the check problems (edges, both layouts, f16 and int8 weights), then
  # benched at SD 1.5's heaviest conv and GEMM shapes against the tuned database's picks
  # (each bench checks its point against Eigen first); wide.txt has every median.
  W="WM=4,WN=4,SGM=2,SGN=2"
  step 100 check-wide-gemm $S check --backend vulkan --op gemm --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nchw,f16.buffer.nc4hw4 --weights f16,int8 --params $W --csv "$R/check-wide-gemm.csv"
  step 100 check-wide-conv $S check --backend vulkan --op conv --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nchw,f16.buffer.nc4hw4 --weights f16,int8 --params $W,SK=2 --csv "$R/check-wide-conv.csv"
  tail -2 "$R/check-wide-gemm.txt" "$R/check-wide-conv.txt"
  B="$S bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --llc-mib 60 --variant coopmat_f16"
  P="WM=2,WN=2,SGM=2,SGN=2 WM=2,WN=2,SGM=2,SGN=4 WM=4,WN=4,SGM=2,SGN=2 WM=4,WN=2,SGM=2,SGN=4
     WM=4,WN=4,SGM=2,SGN=1 WM=4,WN=4,SGM=1,SGN=2 WM=4,WN=4,SGM=2,SGN=2,KS=64,DB=0"
  i=0
  for pt in $P; do
    i=$((i + 1))
    step 40 wide-conv640-$i $B --op conv --shape 2x640x32x32 --attrs cout=640,residual=1 --params $pt,SK=1
    step 40 wide-conv320-$i $B --op conv --shape 2x320x64x64 --attrs cout=320,residual=1 --params $pt,SK=1
    step 40 wide-conv1280-$i $B --op conv --shape 2x1280x16x16 --attrs cout=1280,residual=1 --params $pt,SK=4
    step 40 wide-gemm-$i $B --op gemm --shape 2x320x1x4096 --attrs n=320,epilogue=none,bias=0,residual=0 --params $pt
    step 40 wide-geglu-$i $B --op gemm --shape 2x320x1x4096 --attrs n=2560,epilogue=geglu,bias=1,residual=0 --params $pt
  done
  # The latency-bound small GEMMs (time-embedding GEMV, the 77-token context's K and V, 256
  # tokens at K = 1280): K steps per work-group (split-K, KS) against tile height; split-K
  # checked on tensor cores first.
  i=0
  step 100 check-splitk-gemm $S check --backend vulkan --op gemm --variant coopmat_f16 --arithmetic f16 \
    --storage f16.buffer.nchw,f16.buffer.nc4hw4 --weights f16,int8 --params SK=4 --csv "$R/check-splitk-gemm.csv"
  tail -2 "$R/check-splitk-gemm.txt"
  for pt in SK=1 SK=2 SK=4 SK=8 SK=16 KS=64 KS=64,SK=4 WM=1,SGM=2,SGN=2,SK=4; do
    i=$((i + 1))
    step 30 wide-gemv-$i $B --op gemm --shape 2x1280x1x1 --attrs n=1280,epilogue=none,bias=1,residual=0 --params $pt
    step 30 wide-ctx-$i $B --op gemm --shape 2x768x1x77 --attrs n=1280,epilogue=none,bias=0,residual=0 --params $pt
    step 30 wide-g256-$i $B --op gemm --shape 2x1280x1x256 --attrs n=1280,epilogue=none,bias=0,residual=0 --params $pt
  done
  grep -hE "^(gemm|conv) |error|unsupported" "$R"/wide-*.txt > "$R/wide.txt"; cat "$R/wide.txt"
  step 60 kernels-wide env SDSPEED_VK_PIPELINE_STATS=1 $S check --backend vulkan --op conv \
    --variant coopmat_f16 --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --params $W,SK=1 \
    --shape 2x640x32x32 --attrs cout=640 --dump-kernels "$R/kernels-wide"
  pack
fi
if want taps; then
  # conv coopmat_f16's tap-major K on tensor cores: the check problems (Cin 5..36: channel-
  # major but for none), then Cin % 8 == 0 shapes, every storage of the race and NCHW, f16
  # and q8_0 weights (the rows are derived from each), resident and per call, split-K too.
  C="$S check --backend vulkan --op conv --variant coopmat_f16 --arithmetic f16"
  step 100 check-taps $C --storage f16.buffer.nc4hw4,f16.buffer.nchw,f32.buffer.nchw --weights f16,int8 --points 2 \
    --shape 2x16x9x11,1x40x11x9,2x320x16x16 --attrs cout=70,residual=1,bias=1 --csv "$R/check-taps.csv"
  step 100 check-taps-s2 $C --storage f16.buffer.nc4hw4 --weights f16 --points 2 --shape 1x24x17x13 \
    --attrs cout=40,stride=2,temb=1 --csv "$R/check-taps-s2.csv"
  step 100 check-taps-1x1 $C --storage f16.buffer.nc4hw4 --weights f16,int4 --points 2 --shape 2x64x7x9 \
    --attrs cout=24,k=1,pad=0,residual=1 --csv "$R/check-taps-1x1.csv"
  step 100 check-taps-sk $C --storage f16.buffer.nc4hw4 --weights f16 --params SK=4 --shape 2x1280x8x8 \
    --attrs cout=1280,residual=1 --csv "$R/check-taps-sk.csv"
  step 100 check-taps-unet $C --storage f16.buffer.nc4hw4 --weights f16 --points 0 --shape 2x320x64x64 \
    --attrs cout=320,temb=1 --csv "$R/check-taps-unet.csv"
  tail -n 2 "$R"/check-taps*.txt
  # Tap-major against the channel-major gather, same build, SD 1.5's heaviest convolutions
  # (UNet at 64x64 latents and the VAE decoder's), the race's storage and weights, the
  # default points fitted to each (SK sized per problem).
  B="$S bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --llc-mib 60 --variant coopmat_f16 --op conv"
  SH="2x320x64x64:cout=320,residual=1 2x640x32x32:cout=640,residual=1 2x1280x16x16:cout=1280,residual=1
      2x2560x16x16:cout=1280,temb=1 2x1280x8x8:cout=1280,residual=1
      1x128x512x512:cout=128,residual=1 1x256x256x256:cout=256 1x512x128x128:cout=512"
  i=0
  for sh in $SH; do
    i=$((i + 1))
    step 60 taps-$i $B --shape ${sh%%:*} --attrs ${sh#*:}
    step 60 chmajor-$i env SDSPEED_VK_CONV_CHANNEL_MAJOR=1 $B --shape ${sh%%:*} --attrs ${sh#*:}
  done
  for i in $(seq 1 $i); do
    printf '%s\n' "$(grep -h "^conv " "$R/chmajor-$i.txt" | awk '{print "chmajor", $0}')" "$(grep -h "^conv " "$R/taps-$i.txt" | awk '{print "taps   ", $0}')"
  done > "$R/taps.txt"
  cat "$R/taps.txt"
  # (No OpenCL run: its image is an earlier call's, TAPS_OPENCL=1 to make it here.)
  [ "${TAPS_OPENCL:-0}" = 1 ] && sd_run run-opencl-f32 150
  sd_run run-vulkan-f16-race 100 --backend vulkan --arithmetic f16 --precision f16 --weights f16
  S0=$S; S="env SDSPEED_VK_CONV_CHANNEL_MAJOR=1 $S0"
  sd_run run-vulkan-f16-chmajor 100 --backend vulkan --arithmetic f16 --precision f16 --weights f16
  S=$S0
  summarize
  # Where the race's time goes now, UNet and VAE decoder op by op.
  step 120 profile-vulkan-f16-race $S run $SD --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
    --profile --report "$R/profile-vulkan-f16-race.json" -o "$R/profile.png"
  pack
fi
if want gn; then
  # groupnorm two_pass_f16 (groupnorm_two_pass.comp: SPLIT work-groups per group for the
  # statistics, then every element) against one_pass_f16 (a work-group per group: 32 for
  # the VAE's single image, 36 of its 72 ms on an H100, results/vulkan/taps/README.md).
  step 100 check-gn $S check --backend vulkan --op groupnorm --variant two_pass_f16 --arithmetic f16 \
    --storage f16.buffer.nc4hw4,f16.buffer.nchw --points 4 --csv "$R/check-gn.csv"
  tail -n 2 "$R/check-gn.txt"
  B="$S bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --llc-mib 60 --op groupnorm"
  i=0
  for sh in 1x128x512x512:silu=1 1x256x256x256:silu=1 1x512x128x128:silu=1 2x320x64x64:silu=1 2x1280x8x8:silu=1; do
    i=$((i + 1))
    step 60 gn-$i $B --shape ${sh%%:*} --attrs g=32,eps=1e-06,${sh#*:} --variant one_pass_f16,two_pass_f16 --points 6
  done
  grep -hE "^groupnorm " "$R"/gn-*.txt > "$R/gn.txt"; cat "$R/gn.txt"
  sd_run run-vulkan-f16-race 100 --backend vulkan --arithmetic f16 --precision f16 --weights f16
  sd_run run-vulkan-f16-gn2 100 --backend vulkan --arithmetic f16 --precision f16 --weights f16 --variant groupnorm=two_pass_f16
  summarize
  step 120 profile-vulkan-f16-gn2 $S run $SD --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
    --variant groupnorm=two_pass_f16 --profile --report "$R/profile-vulkan-f16-gn2.json" -o "$R/profile-gn2.png"
  pack
fi
if want ln; then
  # layernorm / softmax split, split_f16 (token_row: TX tokens by PARTS work-items sharing
  # each token's channels, session 45): checked on the GPU, benched against cooperative_f16
  # (the database's LayerNorm entries) at SD 1.5's five LayerNorm instances, f16 as the race
  # runs them, then the race command as the database has it beside the same with split_f16
  # named for every LayerNorm (~3 min).
  for op in layernorm softmax; do
    step 100 check-split-$op $S check --backend vulkan --op $op --variant split,split_f16 --arithmetic f32,f16 \
      --storage f32.buffer.nchw,f16.buffer.nc4hw4 --points 4 --csv "$R/check-split-$op.csv"
    tail -n 1 "$R/check-split-$op.txt"
  done
  B="$S bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --llc-mib 60 --op layernorm"
  i=0
  for sh in 2x320x1x4096 2x640x1x1024 2x1280x1x256 2x1280x1x64 2x768x1x77; do
    i=$((i + 1))
    step 60 ln-$i $B --shape $sh --attrs eps=1e-05 --variant cooperative_f16,split_f16 --points 6
  done
  grep -hE "^layernorm " "$R"/ln-*.txt > "$R/ln.txt"; cat "$R/ln.txt"
  # GroupNorm two_pass_f16's NC4HW4 slices (QUADS, session 45) against its per-element
  # form (SDSPEED_VK_GN_PER_ELEMENT=1), at the UNet's and the VAE's largest instances.
  B="$S bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --llc-mib 60 --op groupnorm"
  i=0
  for sh in 2x320x64x64:eps=1e-05,silu=1 2x320x1x4096:eps=1e-06,silu=0 1x128x512x512:eps=1e-06,silu=1 1x512x128x128:eps=1e-06,silu=1; do
    i=$((i + 1))
    step 60 gnq-$i $B --shape ${sh%%:*} --attrs g=32,${sh#*:} --variant two_pass_f16 --points 4
    step 60 gne-$i env SDSPEED_VK_GN_PER_ELEMENT=1 $B --shape ${sh%%:*} --attrs g=32,${sh#*:} --variant two_pass_f16 --points 4
  done
  for f in "$R"/gnq-*.txt "$R"/gne-*.txt; do echo "${f##*/}: $(grep -hE "^groupnorm " "$f" | head -1)"; done > "$R/gn-quads.txt"
  cat "$R/gn-quads.txt"
  # The race command: before both (the database's LayerNorms, GroupNorm per element), with
  # GroupNorm's slices, then with split_f16 named for every LayerNorm too.
  # (An assignment before a function call is in the environment of what the function runs.)
  SDSPEED_VK_GN_PER_ELEMENT=1 sd_run run-vulkan-f16-before 100 --backend vulkan --arithmetic f16 --precision f16 \
    --weights f16
  sd_run run-vulkan-f16-db 100 --backend vulkan --arithmetic f16 --precision f16 --weights f16
  sd_run run-vulkan-f16-ln-split 100 --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
    --variant layernorm=split_f16
  summarize
  pack
fi
if want gemv; then
  # gemm gemv / gemv_f16 (gemm_gemv.comp, session 44): checked on the GPU at sampled points,
  # every storage and weight format, and at SD 1.5's sizes (--full: the time embedding's
  # Linears), then benched against coopmat_f16 (tensor cores, split-K: 18-21 us at M = 2 on
  # an H100) at the time embedding's four instances, f16 as the race runs them.
  step 120 check-gemv $S check --backend vulkan --op gemm --variant gemv,gemv_f16 --arithmetic f32,f16 \
    --storage f32.buffer.nchw,f16.buffer.nc4hw4 --weights f32,f16,int8,int4 --points 4 --csv "$R/check-gemv.csv"
  tail -n 2 "$R/check-gemv.txt"
  step 90 check-gemv-full $S check --backend vulkan --op gemm --variant gemv_f16 --arithmetic f16 \
    --storage f16.buffer.nc4hw4 --weights f16 --points 0 --full --csv "$R/check-gemv-full.csv"
  tail -n 2 "$R/check-gemv-full.txt"
  B="$S bench --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --llc-mib 60 --op gemm"
  i=0
  for inst in 2x1280x1x1:n=1280,bias=1 2x1280x1x1:n=640,bias=1 2x1280x1x1:n=320,bias=1 2x320x1x1:n=1280,bias=1,epilogue=silu; do
    i=$((i + 1))
    step 60 gemv-$i $B --shape ${inst%%:*} --attrs ${inst#*:} --variant gemv_f16,coopmat_f16 --points 4
  done
  grep -hE "^gemm " "$R"/gemv-*.txt > "$R/gemv.txt"; cat "$R/gemv.txt"
  pack
fi
if want gemm-peer; then
  # #22's GEMM target: each of SD 1.5's Linear shapes (bench/instances/sd15-512-linear-f16.txt)
  # at >= 60% of PyTorch fp16 matmul's rate, both accumulating in f32: sdspeed-bench on
  # Vulkan (coopmat_f16 and tiled_f16, tuned or default points) and pytorch_ops.py on CUDA
  # in the same call, joined by bench/peers/compare.py (gemm-peer.md).
  # GEMM_PEER_LAYOUTS (default both): nchw, the instance file's layout, and nc4hw4, the
  # race's (sd15-512-linear-f16-nc4hw4.txt: coopmat_f16 only, tiled_f16 being 4x slower).
  B=build-dev/bench/sdspeed-bench
  [ -x $B ] || step 180 build-bench cmake --build build-dev -j16 --target sdspeed-bench
  for lay in ${GEMM_PEER_LAYOUTS:-nchw nc4hw4}; do
    I=bench/instances/sd15-512-linear-f16.txt V=coopmat_f16,tiled_f16 sfx=
    [ $lay = nc4hw4 ] && I=bench/instances/sd15-512-linear-f16-nc4hw4.txt V=coopmat_f16 sfx=-nc4hw4
    step 150 gemm-sdspeed$sfx $B --backend vulkan --instances $I --variant $V --llc-mib 60 \
      --benchmark_min_time=0.1 --benchmark_out="$R/gemm-sdspeed$sfx.json" --benchmark_out_format=json
    step 120 gemm-pytorch$sfx python3 bench/peers/pytorch_ops.py --instances $I --llc-mib 60 --out "$R/gemm-pytorch$sfx.jsonl"
    python3 bench/peers/compare.py --sdspeed "$R/gemm-sdspeed$sfx.json" --pytorch "$R/gemm-pytorch$sfx.jsonl" \
      --out "$R/gemm-peer$sfx.md" > "$R/gemm-compare$sfx.txt" 2>&1 && cat "$R/gemm-peer$sfx.md"
  done
  pack
fi
if want run; then
  # SD 1.5 512x512, batch 2 (CFG), 5 DDIM steps, seeded random weights: OpenCL f32 as the
  # default run does (configs/tuned), then Vulkan f32 and f16 arithmetic. Vulkan has no
  # tuning database yet, so its runs name the variants for the big ops (one per family;
  # an instance the named variant cannot run takes the family's default order, counted
  # as a fallback in the report):
  #   f32: attention flash (else naive, the first variant, runs); conv direct as on the
  #        last visit (207 ms; the untuned implicit GEMM ran 573 ms), then Winograd F(4x4)
  #        for the 3x3 stride-1 convolutions (direct for the rest).
  #   f16: attention flash_f16; conv and gemm by the default order under f16 arithmetic:
  #        their coopmat_f16 where the device has cooperative matrices, else
  #        im2col_gemm_f16 and tiled_f16.
  VK="--backend vulkan --variant conv=direct,attention=flash"
  sd_run run-opencl-f32 150
  sd_run run-vulkan-f32 150 $VK
  sd_run run-vulkan-f32-wino 150 --backend vulkan --variant conv=winograd_f4x4_3x3,attention=flash
  # The issue's f16 command: f16 arithmetic, storage and weights.
  sd_run run-vulkan-f16 150 --backend vulkan --variant attention=flash_f16 --arithmetic f16 --precision f16 --weights f16
  # The race command (#22) with attention on tensor cores too (flash_coopmat_f16 has
  # default rank 0: it is named until a tuned database chooses it).
  sd_run run-vulkan-f16-tc 150 --backend vulkan --variant attention=flash_coopmat_f16 --arithmetic f16 --precision f16 --weights f16
  # Decoded-image PSNR (image in [-1, 1], 10 log10(4 / MSE)) of each run against Vulkan f32
  # and OpenCL f32, and the UNet medians side by side.
  summarize
  pack
fi
if want race; then
  # #22's race in one call with the peer stage: OpenCL f32 (the image the PSNR compares
  # against) and the issue's command as written (no --variant: the default order), untuned.
  # RACE_OPENCL=0 skips the OpenCL run (a short call: compare with an earlier one's image).
  [ "${RACE_OPENCL:-1}" = 1 ] && sd_run run-opencl-f32 150
  sd_run run-vulkan-f16-race 150 --backend vulkan --arithmetic f16 --precision f16 --weights f16
  # RACE_EVERY_STEP=1: the same with the text context's K and V recomputed at every step
  # (--context-ops every-step, diffusers' behaviour), for the A/B of the default `once`.
  [ "${RACE_EVERY_STEP:-0}" = 1 ] && sd_run run-vulkan-f16-every-step 150 --backend vulkan --arithmetic f16 \
    --precision f16 --weights f16 --context-ops every-step
  # #22's 20-step target (text encoder + the UNet calls + VAE decoder, device total): the
  # race command at 20 DDIM steps (its report's total_device; no decoded tensor kept).
  step 150 steps20-vulkan-f16 $S run ${SD/--steps 5/--steps 20} --backend vulkan --arithmetic f16 --precision f16 \
    --weights f16 --report "$R/steps20-vulkan-f16.json" -o "$R/steps20-vulkan-f16.png"
  grep -E "UNet / step|total \(device\)|VAE decoder  " "$R/steps20-vulkan-f16.txt"
  summarize
  # RACE_EXTRAS=0 ends the stage here (a call that profiled the same database already).
  if [ "${RACE_EXTRAS:-1}" = 1 ]; then
  # Where the race command's time goes, op by op (per-op timestamps; no decode).
  step 120 profile-vulkan-f16-race $S run $SD --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
    --profile --no-decode --report "$R/profile-vulkan-f16-race.json"
  # The GEMM pipelines of both f16 variants at an SD 1.5 Linear shape, with the driver's
  # statistics (registers, spills: runtime/vulkan/README.md) and internal representations.
  step 90 kernels-gemm env SDSPEED_VK_PIPELINE_STATS=1 $S check --backend vulkan --op gemm \
    --variant coopmat_f16,tiled_f16 --arithmetic f16 --storage f16.buffer.nchw --weights f16 --points 0 \
    --shape 2x320x1x4096 --attrs n=320 --dump-kernels "$R/kernels-gemm"
  # The GEGLU GEMM of the issue at both variants' default points (seconds): against the
  # bench stage's figures of an earlier call on the same kind of GPU.
  step 60 bench-geglu-defaults $S bench --backend vulkan --op gemm --shape 2x320x1x4096 \
    --attrs n=2560,epilogue=geglu,bias=1,residual=0 --variant coopmat_f16,tiled_f16 --arithmetic f16 \
    --storage f16.buffer.nchw --weights f16 --llc-mib 60
  cat "$R/bench-geglu-defaults.txt"
  fi
  pack
fi
if want peer; then
  # PyTorch fp32 / fp16 eager and fp16 torch.compile on the same model and shapes
  # (bench/peers/peer_sd15.py; diffusers carried as a wheel: carry .whl too), for the
  # side-by-side table of #21 / #22 in the same script call as the run stage.
  if install_wheels; then
    step 300 peer-pytorch env OUT="$R" PEER_COMPILE=1 PEER_DTYPES=${PEER_DTYPES:-float32,float16} PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 \
      python3 bench/peers/peer_sd15.py configs/models/sd15
    cat "$R/peer-pytorch.txt"
  else
    log "peer: no diffusers wheel (.whl not carried?)"
  fi
  pack
fi
if want stamps; then
  # Session 46: a graph run without --profile records timestamps only at its span's ends
  # (Backend::beginSpanOnly), where every dispatch had a pair before (2.3 us a dispatch on
  # an H100, roofline's dispatch line). The race command each way, twice, interleaved:
  # SDSPEED_VK_STAMP_EVERY_DISPATCH=1 is the old recording (~1.5 min).
  for i in 1 2; do
    SDSPEED_VK_STAMP_EVERY_DISPATCH=1 sd_run run-vulkan-f16-stamped-$i 100 --backend vulkan --arithmetic f16 \
      --precision f16 --weights f16
    sd_run run-vulkan-f16-span-$i 100 --backend vulkan --arithmetic f16 --precision f16 --weights f16
  done
  summarize
  pack
fi
if want barriers; then
  # Session 47: a span-only run records a barrier only before a dispatch that shares a
  # written range with one since the last barrier (DispatchSync::hazardsOnly). The race
  # command each way, twice, interleaved: SDSPEED_VK_BARRIER_EVERY_DISPATCH=1 is the
  # recording before (a barrier before every dispatch). A missing barrier would be a race
  # on the GPU (lavapipe runs dispatches in order): the decoded images of both ways are
  # compared element by element (max |difference|; 0 where both computed the same bits),
  # and each against OpenCL f32 (summary.txt's PSNR) when the race stage ran before.
  for i in 1 2; do
    SDSPEED_VK_BARRIER_EVERY_DISPATCH=1 sd_run run-vulkan-f16-barrier-every-$i 100 --backend vulkan --arithmetic f16 \
      --precision f16 --weights f16
    sd_run run-vulkan-f16-elided-$i 100 --backend vulkan --arithmetic f16 --precision f16 --weights f16
  done
  python3 - "$R" > "$R/barriers-diff.txt" 2>&1 <<'PY'
import json, os, sys
import numpy as np
sys.path.insert(0, "scripts")
from device_decoded import decoded as read_decoded
r = sys.argv[1]
def decoded(name): return read_decoded(r, name)
base = decoded("run-vulkan-f16-barrier-every-1")
for n in ["run-vulkan-f16-barrier-every-2", "run-vulkan-f16-elided-1", "run-vulkan-f16-elided-2"]:
    d = decoded(n)
    if base is None or d is None: print(n, "missing"); continue
    print(f"{n} vs run-vulkan-f16-barrier-every-1: max |diff| {np.max(np.abs(d - base)):.3g}, "
          f"elements differing {int(np.count_nonzero(d != base))} of {d.size}")
for n in sorted(f[:-5] for f in os.listdir(r) if f.startswith("run-vulkan-f16-") and f.endswith(".json")):
    c = json.load(open(os.path.join(r, n + ".json"))).get("commands", {})
    if c.get("unet_dispatches"): print(f"{n}: last UNet call {c['unet_dispatches'][-1]} dispatches, {c['unet_barriers'][-1]} barriers")
PY
  cat "$R/barriers-diff.txt"
  summarize
  pack
fi
if want wino; then
  # Issue #22 lists Winograd's batched-GEMM stage on cooperative matrices "if it still
  # wins" (not built). This measures whether it could: the Vulkan Winograd variants (f32
  # arithmetic, their GEMM stage scalar; f16 storage and weights as the race runs) beside
  # conv coopmat_f16 (implicit GEMM on tensor cores) at the UNet's four costliest 3x3
  # convs (the ResNet blocks' second conv, residual added). F(4x4) does 1/4 of the direct
  # convolution's multiplies: a coopmat GEMM stage runs those at the tensor cores' rate,
  # so what decides whether it can win is the time of the transforms (memory-bound), which
  # the total alone does not show: --stages times the stages apart (input transform, GEMM,
  # output transform). Each variant at its defaults and 4 sampled points (~2 min).
  # WINO_SHAPES narrows the list (e.g. "320x64x64:320 640x32x32:640"; N x C x H x W: the
  # VAE's, batch 1, too).
  # Session 50: winograd_f2x2_coopmat_f16 (its GEMM on tensor cores, gemm_coopmat.comp with
  # one U per plane) first checked on the tensor cores (its quick problems have no Cin % 8
  # == 0: SD shapes, f16 and int8 weights, both layouts), then benched with the others, 8
  # points of its own.
  for sc in 2x320x64x64:cout=320,residual=1 2x1280x16x16:cout=1280,temb=1 1x16x9x11:cout=70,residual=1; do
    step 120 check-wino-coopmat-${sc%%:*} $S check --backend vulkan --op conv --variant winograd_f2x2_coopmat_f16 \
      --arithmetic f16 --storage f16.buffer.nc4hw4,f16.buffer.nchw --weights f16,int8 --points 3 \
      --shape ${sc%%:*} --attrs ${sc#*:} --csv "$R/check-wino-coopmat-${sc%%:*}.csv"
  done
  for sc in ${WINO_SHAPES:-320x64x64:320 640x32x32:640 1280x16x16:1280 1280x8x8:1280}; do
    shape=${sc%%:*} cout=${sc##*:}
    case $shape in *x*x*x*) ;; *) shape=2x$shape;; esac
    step 90 bench-wino-$shape $S bench --backend vulkan --op conv --shape $shape --attrs cout=$cout,residual=1 \
      --variant winograd_f2x2_3x3,winograd_f4x4_3x3,coopmat_f16 --arithmetic f32,f16 --storage f16.buffer.nc4hw4 \
      --weights f16 --points 4 --llc-mib 60 --stages --csv "$R/bench-wino-$shape.csv"
    step 90 bench-wino-coopmat-$shape $S bench --backend vulkan --op conv --shape $shape --attrs cout=$cout,residual=1 \
      --variant winograd_f2x2_coopmat_f16 --arithmetic f16 --storage f16.buffer.nc4hw4 \
      --weights f16 --points 8 --llc-mib 60 --stages --csv "$R/bench-wino-coopmat-$shape.csv"
    grep -hE "^conv|^stages" "$R/bench-wino-$shape.txt" "$R/bench-wino-coopmat-$shape.txt"
  done
  pack
fi
if want nontc; then
  # #21 without tensor cores, beside OpenCL f32: Vulkan f32 (Winograd F(4x4) for the 3x3s,
  # flash attention), and f16 arithmetic on the half variants that use no cooperative
  # matrices (im2col_gemm_f16, tiled_f16, flash_f16).
  sd_run run-opencl-f32 150
  sd_run run-vulkan-f32-wino 100 --backend vulkan --variant conv=winograd_f4x4_3x3,attention=flash
  sd_run run-vulkan-f16-notc 100 --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
    --variant conv=im2col_gemm_f16,gemm=tiled_f16,attention=flash_f16
  summarize
  pack
fi
if want ab; then
  # An A/B in one call, on one machine: the tree with the files under .ab/ put back (old
  # versions, carried: `mkdir -p .ab/DIR && git show REV:DIR/FILE > .ab/DIR/FILE`, then
  # carry ".ab") built as build-ab, and each of AB_BENCHES (';'-separated `sdspeed bench`
  # argument lists) timed by both builds in turn, twice (new, old, new, old): ab.txt.
  if [ -d .ab ] && [ -n "${AB_BENCHES:-}" ]; then
    rm -rf /tmp/ab-tree && mkdir -p /tmp/ab-tree
    tar --exclude=./build-dev --exclude=./build-ab --exclude=./.git -cf - . | tar -C /tmp/ab-tree -xf -
    cp -r .ab/. /tmp/ab-tree/
    (cd .ab && find . -type f | sort) > "$R/ab-files.txt"
    step 240 build-ab bash -c "cmake -S /tmp/ab-tree -B build-ab -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF \
      -DVulkan_INCLUDE_DIR=/opt/vk/usr/include -DVulkan_LIBRARY=/usr/lib/x86_64-linux-gnu/libvulkan.so.1 \
      -DSDSPEED_GLSLC=/opt/vk/usr/bin/glslc && cmake --build build-ab -j16 --target sdspeed"
    i=0
    IFS=';' read -ra benches <<< "$AB_BENCHES"
    for args in "${benches[@]}"; do
      i=$((i + 1))
      for round in 1 2; do
        for side in new old; do
          bin=$S; [ $side = old ] && bin=build-ab/cli/sdspeed
          step 90 ab-$i-$side-$round $bin bench --backend vulkan --llc-mib 60 $args
        done
      done
    done
    for f in "$R"/ab-[0-9]*-*.txt; do
      grep -hE "^[a-z]+ [0-9]" "$f" | sed "s|^|$(basename "$f" .txt) |"
    done > "$R/ab.txt"
    cat "$R/ab.txt"
  else
    log "ab: no .ab/ folder or no AB_BENCHES: skipped"
  fi
  pack
fi
if want tune; then
  # #22 item 3: the model-guided whole-model tune of the race command's instances (f16
  # arithmetic, storage as `run --precision f16` computes in: f16 NC4HW4, f16 weights),
  # heaviest first, TUNE_SECONDS (default 240: then the profile step outruns a 10-minute call; about 150 fits
  # a cold machine) in all; resumable (the same sweep folder).
  # Then the race command with that database. The database and sweeps come back in db/,
  # to check in as configs/tuned/<its device key>.yaml and results/sweeps/.
  # TUNE_OPS="attention groupnorm" instead: only those families' SD 1.5 instances,
  # TUNE_POINTS (default 12) model-guided points each, extending the checked-in database
  # (copied in first), for a family whose kernels changed since the last whole-model tune;
  # TUNE_VARIANT=coopmat_f16 spends those points on that variant alone, TUNE_CAP (default
  # 300) caps each family's step in seconds.
  DB=build-dev/tuned-vk SW=build-dev/sweeps-vk
  mkdir -p $DB $SW
  # TUNE_INSTANCES="OP:SHAPE:ATTRS[:VARIANT];..." (e.g. gemm:2x1280x1x1:n=1280,bias=1:gemv_f16):
  # those op instances alone, every variant (VARIANT or TUNE_VARIANT narrows it), TUNE_POINTS points each, into
  # the same database and sweeps (after TUNE_OPS when both are given).
  # Every mode starts from the checked-in databases and sweeps (never over ones this
  # machine already extended): the instances a tune does not reach keep their entries; a
  # point measured at the family's current source is reused, not re-timed; and on a
  # device with no file of its own (the first H200 tune) the other devices' files answer
  # its current choices through the vendor fallback, which the search starts from.
  cp -n configs/tuned/vulkan-*.yaml $DB/ 2>/dev/null
  cp -rn results/sweeps/vulkan-* $SW/ 2>/dev/null
  if [ "${TUNE_UNTUNED:-0}" = 1 ]; then
    # TUNE_UNTUNED=1: first the race command profiled with that database (the VAE decoded,
    # so its profile comes too); the instances that ran a point not tuned for them (the
    # profile's params other than exact), costliest first, at most TUNE_UNTUNED_MAX (default
    # 8: at 10 to 30 s an instance the stage fits a 10-minute call) and costing at least
    # TUNE_UNTUNED_MIN_MS (default 0.25) ms a run, join TUNE_INSTANCES
    # (scripts/dev/untuned-instances.py; its list goes to untuned.txt).
    rm -f "$R/profile-before-tune.json"  # never an earlier call's
    step 150 profile-before-tune $S run $SD --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
      --db-dir $DB --profile --report "$R/profile-before-tune.json"
    U=$(python3 scripts/dev/untuned-instances.py "$R/profile-before-tune.json" --max ${TUNE_UNTUNED_MAX:-8} \
      --min-ms ${TUNE_UNTUNED_MIN_MS:-0.25} \
      2> "$R/untuned.txt") || U=
    cat "$R/untuned.txt"
    if [ -n "$U" ]; then TUNE_INSTANCES="${TUNE_INSTANCES:+$TUNE_INSTANCES;}$U"; fi
  fi
  if [ "${TUNE_UNTUNED:-0}" = 1 ] && [ -z "${TUNE_OPS:-}${TUNE_INSTANCES:-}" ]; then
    # Nothing to tune (every instance exact, or the profile failed: untuned.txt says
    # which): not the whole-model tune below, which nobody asked for.
    log "tune: TUNE_UNTUNED=1 found no instance to tune: skipped"
  elif [ -n "${TUNE_OPS:-}${TUNE_INSTANCES:-}" ]; then
    for op in ${TUNE_OPS:-}; do
      step ${TUNE_CAP:-300} tune-$op $S tune --op $op --model configs/models/sd15 --width 512 --height 512 --batch 2 \
        --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --strategy model --seed 1 \
        --budget ${TUNE_POINTS:-12} --db-dir $DB --sweep-dir $SW ${TUNE_VARIANT:+--variant $TUNE_VARIANT}
      grep -E "measured|skipped" "$R/tune-$op.txt" | tail -20
    done
    IFS=';' read -ra insts <<< "${TUNE_INSTANCES:-}"
    for inst in "${insts[@]}"; do
      # OP:SHAPE:ATTRS[:VARIANT]: a fourth field narrows that instance to one variant
      # (TUNE_VARIANT otherwise).
      IFS=':' read -r op shape attrs variant <<< "$inst"
      variant=${variant:-${TUNE_VARIANT:-}}
      step ${TUNE_CAP:-300} "tune-$op-$shape-${attrs//[=,]/_}" $S tune --op $op --shape $shape --attrs "$attrs" \
        --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --strategy model --seed 1 \
        --budget ${TUNE_POINTS:-12} --db-dir $DB --sweep-dir $SW ${variant:+--variant $variant}
    done
  else
    step $(( ${TUNE_SECONDS:-240} + 120 )) tune $S tune --model configs/models/sd15 --width 512 --height 512 --batch 2 \
      --backend vulkan --arithmetic f16 --storage f16.buffer.nc4hw4 --weights f16 --strategy model --seed 1 \
      --total-seconds ${TUNE_SECONDS:-240} --db-dir $DB --sweep-dir $SW --devices-dir configs/devices
    tail -8 "$R/tune.txt"
  fi
  mkdir -p "$R/db" && cp -r $DB $SW "$R/db/"
  sd_run run-vulkan-f16-tuned 150 --backend vulkan --arithmetic f16 --precision f16 --weights f16 --db-dir $DB
  summarize
  # Where the tuned run's time goes, op by op (last: the per-op timestamps may cost a little).
  step 120 profile-vulkan-f16-tuned $S run $SD --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
    --db-dir $DB --profile --no-decode --report "$R/profile-vulkan-f16-tuned.json"
  pack
fi
if want setup; then
  F16=/tmp/sd15-f16
  if [ ! -f $F16/unet/diffusion_pytorch_model.safetensors ]; then
    rm -rf $F16
    step 300 write-f16 $S quantize --random-weights --model configs/models/sd15 --weights f16 -o $F16
  fi
  du -sb $F16/*/*.safetensors > "$R/f16-files.txt" 2>&1
  # configs/models/sd15 has no tokenizer: fixed token ids (any ids time the same).
  python3 - "$R/ids.safetensors" <<'PY'
import json, struct, sys
cond = [49406] + [320] * 8 + [49407] * 68
uncond = [49406] + [49407] * 76
head = json.dumps({"cond": {"dtype": "I64", "shape": [77], "data_offsets": [0, 616]},
                   "uncond": {"dtype": "I64", "shape": [77], "data_offsets": [616, 1232]}}).encode()
head += b" " * (-len(head) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(head)) + head + struct.pack("<154q", *(cond + uncond)))
PY
  FROM_FILE="--model $F16 -W 512 -H 512 --scheduler ddim --steps 2 --input-ids $R/ids.safetensors:cond
    --uncond-input-ids $R/ids.safetensors:uncond --backend vulkan
    --arithmetic f16 --precision f16 --weights f16"
  step 150 setup-cold $S run $FROM_FILE --report "$R/setup-cold.json" -o "$R/setup-cold.png"
  step 120 setup-warm $S run $FROM_FILE --report "$R/setup-warm.json" -o "$R/setup-warm.png"
  python3 - "$R" > "$R/setup.txt" 2>&1 <<'PY'
import json, os, sys
r = sys.argv[1]
print("setup (ms): load = graph, executor, pipelines, weights read and uploaded; warm-up = runs until 500 ms passed")
for n in ["setup-cold", "setup-warm"]:
    p = os.path.join(r, n + ".json")
    if not os.path.exists(p): print(f"{n}: no report (see {n}.txt)"); continue
    j = json.load(open(p)); s = j["setup_ms"]
    parts = ", ".join(f"{c} {v['setup']:.0f} (load {v['load']:.0f}, warm-up {v['warm_up']:.0f})" for c, v in s.items())
    total = sum(v["setup"] for v in s.values())
    print(f"{n}: setup {total:.0f} ms{'  (target <= 5000)' if n == 'setup-warm' else ''}: {parts}")
PY
  grep "end setup-" "$R/steps.txt" >> "$R/setup.txt"  # the whole process, backend creation included
  cat "$R/setup.txt"
  pack
fi
if want ablate; then
  # The regeneration command of configs/ablation/vulkan.yaml's header. A row the H200
  # cannot run (e.g. + tensor cores where the build's glslc lacks GL_NV_cooperative_matrix)
  # prints a skipped: line.
  step 580 ablate $S ablate --random-weights --model configs/models/sd15 -W 512 -H 512 --steps 3 \
    --backend vulkan --ablation configs/ablation/vulkan.yaml --out "$R/ablation-vulkan"
  grep -E '^row |skipped:' "$R/ablate.txt"
  pack
fi
log done
pack
