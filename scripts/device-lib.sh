# What the device visit scripts (scripts/device-*.sh) share; sourced, not run:
#   source "$(dirname "${BASH_SOURCE[0]}")/device-lib.sh"
#   device_results NAME    results in $R=$OUT/NAME (OUT defaults to /tmp/sdspeed-out),
#                          packed into $OUT/NAME.tgz; SDSPEED_COMMIT from .device-commit
#                          (the device copy has no usable .git: `git rev-parse --short=12
#                          HEAD > .device-commit` here, before the visit)
#   log MSG...             a timestamped line on stdout and in $R/steps.txt
#   pack                   repacks $OUT/NAME.tgz (a script with a summary redefines it as
#                          `summary; pack_results`)
#   step CAP NAME CMD...   CMD capped at CAP seconds, its output in $R/NAME.txt, exit status
#                          and wall time logged, then pack: a call cut off at the device
#                          tool's limit (or a hang) still returns what finished
#   finish                 logs done, packs, removes $R (the .tgz holds it) and exits 0
#   install_wheels         the carried wheels (.whl: diffusers, for bench/peers/peer_sd15.py)
#                          into /tmp/site (PYTHONPATH=/tmp/site); fails when none were carried
# Lock files (a sweep's) stay out of the archive.

device_results() {
  RESULTS_NAME=$1
  OUT=${OUT:-/tmp/sdspeed-out}
  R=$OUT/$RESULTS_NAME
  mkdir -p "$R"
  [ -f .device-commit ] && export SDSPEED_COMMIT=$(cat .device-commit)
  return 0
}
log() { echo "[$(date +%T)] $*" | tee -a "$R/steps.txt"; }
# Decoded tensors and images stay on the machine unless KEEP_IMAGES=1 (the PSNRs are
# computed there): session 46's call of seven SD runs made an archive over the device
# tool's size limit, and nothing of it came back.
pack_results() {
  local keep=()
  [ "${KEEP_IMAGES:-0}" = 1 ] || keep=(--exclude="*.safetensors" --exclude="*.png")
  tar -C "$OUT" --exclude="*.lock" "${keep[@]}" -czf "$OUT/$RESULTS_NAME.tgz" "$RESULTS_NAME"
}
pack() { pack_results; }
step() {
  local cap=$1 name=$2; shift 2
  log "start $name (cap ${cap}s): $*"
  local t0 rc
  t0=$(date +%s.%N)
  timeout "$cap" "$@" > "$R/$name.txt" 2>&1
  rc=$?
  log "end $name: exit $rc, wall $(awk "BEGIN{print $(date +%s.%N) - $t0}") s"
  pack
}
finish() { log done; pack && rm -rf "$R"; exit 0; }  # the results stay if tar fails
install_wheels() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl; }
