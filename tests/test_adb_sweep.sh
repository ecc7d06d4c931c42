#!/usr/bin/env bash
# scripts/adb-sweep against tests/adb/fake-adb (installed as `adb` on PATH), with the
# host build of sdspeed as the "phone" binary on PoCL. Covers bad input, three phones
# in parallel (one fine, one cut off mid-sweep, one without OpenCL), what is pulled
# where, and a rerun that pushes nothing unchanged and resumes the cut-off sweep.
# usage: test_adb_sweep.sh SDSPEED_BINARY SOURCE_DIR   (CTest test `adb_sweep`, label adb)
set -uo pipefail
BIN=$1
SRC=$2
SWEEP="$SRC/scripts/adb-sweep"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin"
ln -s "$SRC/tests/adb/fake-adb" "$T/bin/adb"
export PATH="$T/bin:$PATH" FAKE_ADB_ROOT="$T/phones"
unset SDSPEED_ADB_OUT SDSPEED_ADB_BINARY SDSPEED_ADB_REMOTE ADB
cp "$BIN" "$T/sdspeed"  # a copy: the resume case changes it
OUT="$T/out"
TUNE=(tune --op groupnorm --shape 1x32x4x4 --attrs g=8 --strategy random --budget 3 --min-ms 1 --threads 1)

fails=0
passes=0
check() {  # check NAME CONDITION-COMMAND...
  local name=$1
  shift
  if "$@"; then
    passes=$((passes + 1))
  else
    fails=$((fails + 1))
    echo "FAIL: $name"
    echo "---- output of the last run:"
    cat "$T/log"
    echo "----"
  fi
}
has() { grep -qF -- "$1" "$T/log"; }
lacks() { ! grep -qF -- "$1" "$T/log"; }
sweep() {  # runs adb-sweep into $T/log; sets rc
  "$SWEEP" --binary "$T/sdspeed" --out "$OUT" "$@" >"$T/log" 2>&1
  rc=$?
}
phone() {  # phone SERIAL MODEL [marker=value ...]
  local d="$FAKE_ADB_ROOT/devices/$1"
  mkdir -p "$d"
  echo "$2" >"$d/model"
  shift 2
  for m in "$@"; do echo "${m#*=}" >"$d/${m%%=*}"; done
}
rows() { tail -n +2 "$1" 2>/dev/null | grep -c . ; }

# --- bad input: one clear line naming the problem, exit 2 ---
sweep --all -- "${TUNE[@]}"
check "no device attached" test "$rc" = 2
check "no device attached: message" has "adb-sweep: error: no device attached"

phone A "Pixel 7"
phone B "Galaxy S23" fail-mid-run=2
phone C "NoCL Phone" no-opencl=1
phone D "Locked" state=unauthorized

sweep -s NOPE -- "${TUNE[@]}"
check "unknown serial" test "$rc" = 2
check "unknown serial: message" has "adb-sweep: error: device NOPE is not attached (attached:"
sweep -s D -- "${TUNE[@]}"
check "unauthorized serial" has "adb-sweep: error: device D is unauthorized"
sweep -- "${TUNE[@]}"
check "several phones, none chosen" has "3 devices attached (A B C): pass -s SERIAL or --all"
sweep -s A
check "no verb" has "adb-sweep: error: no verb"
sweep -s A -- frobnicate
check "unknown verb" has "adb-sweep: error: unknown verb 'frobnicate'"
sweep -s A --frob -- "${TUNE[@]}"
check "unknown option" has "adb-sweep: error: unknown option '--frob'"
sweep --all -s A -- "${TUNE[@]}"
check "-s with --all" has "exclude each other"
"$SWEEP" --binary "$T/missing" -s A -- "${TUNE[@]}" >"$T/log" 2>&1
check "missing binary" has "device binary '$T/missing' not found"
check "nothing ran on bad input" test ! -e "$OUT/results/devices"

# --- three ready phones at once: A succeeds, B is cut off mid-sweep, C has no OpenCL ---
sweep --all -- "${TUNE[@]}"
check "a failed phone fails the run" test "$rc" = 1
check "A streamed with its name" has "[Pixel_7-A] database: configs/tuned/opencl-pocl-cpu-3.yaml"
check "B streamed with its name" has "[Galaxy_S23-B] error: device 'B' not found"
check "A ok in the summary" grep -qE "^  Pixel_7-A +ok: tune; pulled results, configs/tuned/opencl-pocl-cpu-3.yaml" "$T/log"
check "B failure named" grep -qE "^  Galaxy_S23-B +FAILED: connection lost during tune" "$T/log"
check "C failure named" has "adb-sweep: NoCL_Phone-C: error: no usable OpenCL on this device: sdspeed devices: error: no OpenCL device found"
check "C in the summary" grep -qE "^  NoCL_Phone-C +FAILED: no usable OpenCL" "$T/log"
check "unauthorized D left out of --all" lacks "Locked-D"
A_CSV="$OUT/results/devices/Pixel_7-A/sweeps/opencl-pocl-cpu-3/groupnorm.csv"
B_CSV="$OUT/results/devices/Galaxy_S23-B/sweeps/opencl-pocl-cpu-3/groupnorm.csv"
check "A's sweep pulled (3 rows)" test "$(rows "$A_CSV")" = 3
check "B's partial sweep pulled (1 row before the kill)" test "$(rows "$B_CSV")" = 1
check "A's log kept" compgen -G "$OUT/results/devices/Pixel_7-A/tune-*.log" >/dev/null
check "device list kept" grep -q "pocl\|Xeon\|CPU" "$OUT/results/devices/Pixel_7-A/devices.txt"
check "tuning database pulled" grep -q "groupnorm" "$OUT/configs/tuned/opencl-pocl-cpu-3.yaml"
check "no temporary database left" test -z "$(ls -A "$OUT/configs/tuned" | grep '^\.')"
check "merged table has both phones" grep -qE "^instance +Pixel_7-A +Galaxy_S23-B +NoCL_Phone-C" "$T/log"
check "merged table row" grep -qE "^groupnorm 1x32x4x4 .* f32.buffer.nchw +[0-9.]+ us [a-z_]+ +[0-9.]+ us [a-z_]+ +-$" "$T/log"
check "state kept on phone A" test -s "$FAKE_ADB_ROOT/devices/A/fs/data/local/tmp/sdspeed/results/sweeps/opencl-pocl-cpu-3/groupnorm.csv"
check "program cache on phone A" test -d "$FAKE_ADB_ROOT/devices/A/fs/data/local/tmp/sdspeed/cache"
check "kernels and configs pushed" test -f "$FAKE_ADB_ROOT/devices/A/fs/data/local/tmp/sdspeed/configs/shapes/tiny.yaml"
# The repository's databases stay here: the phone's own is the newest (pulled back).
check "configs/tuned not pushed" test ! -e "$FAKE_ADB_ROOT/devices/A/fs/data/local/tmp/sdspeed/configs/tuned/opencl-nvidia-h200-580.yaml"

# --- resume: B reconnected. Nothing unchanged is pushed; the sweep goes on from row 1 ---
rm "$FAKE_ADB_ROOT/devices/B/fail-mid-run"
: >"$FAKE_ADB_ROOT/calls.log"
sweep -s B -- "${TUNE[@]}"
check "resumed run succeeds" test "$rc" = 0
check "nothing re-pushed" grep -qE "\[Galaxy_S23-B\] pushed 0 files, [0-9]+ unchanged" "$T/log"
check "no push call" test "$(grep -c ' push ' "$FAKE_ADB_ROOT/calls.log")" = 0
check "sweep resumed from the phone's cache" has "2 measured, 1 reused"
check "B's whole sweep pulled" test "$(rows "$B_CSV")" = 3

# A changed binary is pushed again, and only it.
printf 'x' >>"$T/sdspeed"
sweep -s A -- "${TUNE[@]}"
check "changed binary re-pushed alone" grep -qE "\[Pixel_7-A\] pushed 1 files" "$T/log"
check "A's rerun reuses its sweep" has "0 measured, 3 reused"

echo "test_adb_sweep: $passes passed, $fails failed"
((fails == 0))
