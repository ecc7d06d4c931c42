#!/usr/bin/env bash
# The H200 visit for the Vulkan backend (issue #21), through the device tool's `run`:
#   here, once: the loader and the build tools as Debian packages (the H200 image has
#   NVIDIA's Vulkan driver but neither the loader nor glslc; /work/.library/device/README.md):
#     echo /.gl/ >> .git/info/exclude; echo /.vk/ >> .git/info/exclude
#     o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
#     mkdir -p .gl .vk /tmp/amd64/partial && apt-get $o update
#     (cd .gl && apt-get $o download libvulkan1)
#     (cd .vk && apt-get $o download glslc libshaderc1 libvulkan-dev vulkan-tools \
#        libwayland-client0 libx11-6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0 libffi8)
#   before each visit: git rev-parse --short=12 HEAD > .device-commit
#   run (carry .gl .vk): bash scripts/device-vulkan.sh [check|run]
# libvulkan1 goes into / (the README's rule for loaders); the rest into /opt/vk, since
# unpacking other packages into / can break the image.
# What it does (~5 min; each step capped so that a hang keeps what finished):
#   vulkaninfo (full and --summary) and `sdspeed devices` (cooperative-matrix shapes);
#   a build with the Vulkan backend (build-dev, sdspeed only);
#   `sdspeed check --backend vulkan` of every family, f32 and f16 storage and arithmetic;
#   with `run` also: SD 1.5 512x512 through Vulkan f32 / f16 beside OpenCL f32 (#21's targets).
# Results: $OUT/vulkan.tgz, repacked after each step.
set -uo pipefail
OUT=${OUT:-/tmp/sdspeed-out}
R=$OUT/vulkan
mkdir -p "$R"
log() { echo "[$(date +%T)] $*" | tee -a "$R/steps.txt"; }
pack() { tar -C "$OUT" -czf "$OUT/vulkan.tgz" vulkan; }
step() {  # step SECONDS NAME CMD...
  local cap=$1 name=$2; shift 2
  log "start $name (cap ${cap}s): $*"
  timeout "$cap" "$@" > "$R/$name.txt" 2>&1
  log "end $name: exit $?"
  pack
}
[ -f .device-commit ] && export SDSPEED_COMMIT=$(cat .device-commit)
echo "commit ${SDSPEED_COMMIT:-unknown}" > "$R/commit.txt"

# The loader into /, the build tools beside it.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
mkdir -p /opt/vk
for f in .vk/*.deb; do dpkg -x "$f" /opt/vk; done
export PATH=/opt/vk/usr/bin:$PATH
export LD_LIBRARY_PATH=/opt/vk/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if ! ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* >/dev/null 2>&1 && [ -f $icd ]; then
  export VK_DRIVER_FILES=$icd
fi
env | grep -E '^VK_|^LD_LIBRARY' > "$R/env.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$R/nvidia-smi.txt" 2>&1
step 30 vulkaninfo-summary vulkaninfo --summary
step 60 vulkaninfo vulkaninfo

S=build-dev/cli/sdspeed
if [ ! -x $S ] || ! $S devices 2>/dev/null | grep -q vulkan:; then
  step 240 build bash -c "cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF \
    -DVulkan_INCLUDE_DIR=/opt/vk/usr/include -DVulkan_LIBRARY=/usr/lib/x86_64-linux-gnu/libvulkan.so.1 \
    -DSDSPEED_GLSLC=/opt/vk/usr/bin/glslc && cmake --build build-dev -j16 --target sdspeed"
  [ -x $S ] || { tail -40 "$R/build.txt"; pack; exit 1; }
fi
step 60 devices $S devices

# Every family through Vulkan on the H200 (the lavapipe command of results/vulkan/README.md).
step 240 check $S check --backend vulkan --arithmetic f32,f16 \
  --storage f32.buffer.nchw,f32.buffer.nc4hw4,f16.buffer.nchw,f16.buffer.nc4hw4 \
  --csv "$R/check.csv"
tail -5 "$R/check.txt"

if [ "${1:-check}" = run ]; then
  SD="--random-weights --model configs/models/sd15 -W 512 -H 512 --scheduler ddim --steps 5"
  step 200 run-opencl-f32 $S run $SD --report "$R/run-opencl-f32.json" -o "$R/opencl-f32.png"
  step 200 run-vulkan-f32 $S run $SD --backend vulkan --report "$R/run-vulkan-f32.json" -o "$R/vulkan-f32.png"
  step 200 run-vulkan-f16 $S run $SD --backend vulkan --arithmetic f16 --precision f16 --weights f16 \
    --report "$R/run-vulkan-f16.json" -o "$R/vulkan-f16.png"
fi
log done
pack
