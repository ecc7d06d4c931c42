#!/usr/bin/env bash
# Puts an sdspeed built here (build-carry/: Release, no tests, no ICU, stripped) into .bin/
# for a device visit, with the commit it was built at and the Debian library it links that
# the device image (Ubuntu 24.04) lacks (yaml-cpp 0.7), so that scripts/device-vulkan.sh can skip a cold machine's build (150 to
# 240 s of device time). Carry ".bin" beside ".gl .vk". It refuses a tree whose sources
# differ from HEAD (only tests/ and .device-commit may differ: they are not in the binary),
# since the device script takes the binary only when .bin/commit matches .device-commit.
# Without ICU there is no tokenizer: the device runs give token ids or seeded ones, and
# ICU 72 would be 9 MB of the 64 MiB a call carries (the tracked tree is about 48 MiB).
#   once: echo /.bin/ >> .git/info/exclude
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! git diff --quiet HEAD -- . ':!tests' ':!.device-commit'; then
  echo "carry-binary.sh: sources differ from HEAD (git diff HEAD -- . ':!tests'): commit first" >&2
  exit 1
fi
cmake -S . -B build-carry -DCMAKE_BUILD_TYPE=Release -DSDSPEED_BUILD_TESTS=OFF -DCMAKE_DISABLE_FIND_PACKAGE_ICU=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null
CCACHE_BASEDIR=$PWD/.. flock /tmp/build.lock nice cmake --build build-carry -j2 --target sdspeed >/dev/null
mkdir -p .bin
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
if ! ls .bin/libyaml-cpp0.7_*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/amd64/partial && apt-get $o update >/dev/null
  (cd .bin && apt-get $o download libyaml-cpp0.7 >/dev/null)
fi
strip -o .bin/sdspeed.tmp build-carry/cli/sdspeed && mv .bin/sdspeed.tmp .bin/sdspeed
git rev-parse --short=12 HEAD > .bin/commit
"${CXX:-c++}" --version | head -1 > .bin/compiler
echo "carry-binary.sh: .bin/sdspeed at $(cat .bin/commit) ($(du -sh .bin | cut -f1) in .bin)"
