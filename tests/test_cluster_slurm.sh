#!/usr/bin/env bash
# scripts/cluster/slurm-submit against a real one-node Slurm (CTest cluster_slurm, label
# cluster): the test generates a munge key, starts munged, slurmctld and slurmd (Debian's
# munge and slurm-wlm) on loopback with private ports, sockets and state under a
# temporary folder, submits a 3-task array of tune shards on tiny shapes plus the merge
# as a job depending on it (afterok), waits, and compares the merge with one unsharded
# run. Every daemon is stopped at the end, whatever happens (trap on exit, and a watchdog
# process that kills them after 300 s even if this script is killed outright); the
# whole test stops itself after 240 s. Skips (exit 77) when not root or when the
# packages are missing; fails on anything else.
#   tests/test_cluster_slurm.sh SDSPEED_BIN SOURCE_DIR
set -uo pipefail
BIN=$1 SRC=$2
skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root (it starts munged, slurmctld and slurmd)"
for c in munged slurmctld slurmd sbatch squeue scontrol sinfo; do
  command -v "$c" >/dev/null || skip "$c not found (scripts/setup-debian installs slurm-wlm and munge)"
done
DEADLINE=$((SECONDS + 240))
T=$(mktemp -d /tmp/sdspeed-slurm-XXXXXX)
chmod 755 "$T"
pids=() watchdog=""
cleanup() {
  # Jobs first (their slurmstepd processes end with them), then the daemons, by pid.
  if [[ -n ${SLURM_CONF:-} ]] && [[ ${#pids[@]} -gt 0 ]]; then
    scancel --quiet --full -u root 2>/dev/null
    for _ in $(seq 20); do [[ -z $(squeue -h 2>/dev/null) ]] && break; sleep 0.5; done
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [[ $alive -eq 0 ]] && break
    sleep 0.5
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [[ -n $watchdog ]] && kill -- -"$watchdog" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() {
  echo "FAIL: $*"
  for f in "$T"/*.log; do [[ -f $f ]] && { echo "--- $f"; tail -n 30 "$f"; }; done
  exit 1
}
left() { ((SECONDS < DEADLINE)) || fail "over the test's 240 s limit"; }

ARGS=(--op groupnorm --shapes "$SRC/configs/shapes/tiny.yaml" --strategy random --budget 2 --seed 13 --min-ms 1 --threads 1)
# The unsharded run first, outside Slurm: the daemons live only as long as needed.
"$BIN" tune "${ARGS[@]}" --sweep-dir "$T/one/sweeps" --db-dir "$T/one/tuned" >"$T/one.log" 2>&1 ||
  fail "the unsharded run failed"

# munge: a fresh key, its own socket.
mkdir -m 700 "$T/munge"
if command -v mungekey >/dev/null; then
  mungekey --create --keyfile="$T/munge/munge.key" >/dev/null 2>&1 || fail "mungekey failed"
else
  dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 600 "$T/munge/munge.key"
munged --foreground --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.sock" \
  --pid-file="$T/munge/munged.pid" --seed-file="$T/munge/munged.seed" --log-file="$T/munged.log" \
  >>"$T/munged.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [[ -S $T/munge/munge.sock ]] && break; sleep 0.1; done
[[ -S $T/munge/munge.sock ]] || fail "munged did not start"

# Slurm: one node on loopback, private ports picked from the test's own pid.
host=$(hostname -s)
port=$((20000 + ($$ % 20000)))
mkdir -p "$T/state" "$T/spool"
cat >"$T/slurm.conf" <<CONF
ClusterName=sdspeedtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$T/slurm.conf
slurmctld -D -c -f "$SLURM_CONF" >>"$T/slurmctld.log" 2>&1 &
pids+=($!)
slurmd -D -N "$host" -f "$SLURM_CONF" >>"$T/slurmd.log" 2>&1 &
pids+=($!)
# A watchdog outside this process: if the script is killed (a CTest timeout sends
# SIGKILL), no daemon outlives it by more than 300 s. Its own session, so the trap can
# end it and its sleep together (kill -- -PGID).
setsid bash -c 'sleep 300; kill -9 "$@"' watchdog "${pids[@]}" </dev/null >/dev/null 2>&1 &
watchdog=$!
for _ in $(seq 60); do
  [[ $(sinfo -h -o %T 2>/dev/null) == idle* ]] && break
  sleep 0.5
done
[[ $(sinfo -h -o %T 2>/dev/null) == idle* ]] || fail "the Slurm node did not come up: $(sinfo 2>&1)"
echo "slurm up: node $host, ports $port-$((port + 1))"

cd "$T" || fail "no $T"
out=$(SDSPEED=$BIN "$SRC/scripts/cluster/slurm-submit" -n 3 -- "${ARGS[@]}" --sweep-dir "$T/par/sweeps" \
  --db-dir "$T/par/tuned" 2>&1) || fail "slurm-submit failed: $out"
echo "$out"
array=$(sed -n 's/^array job \([0-9]*\) .*/\1/p' <<<"$out")
merge=$(sed -n 's/.*merge job \([0-9]*\) .*/\1/p' <<<"$out")
[[ -n $array && -n $merge ]] || fail "no job ids in: $out"
# The merge waits for the array: while any task is queued or running, it is pending.
state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | sort -u | tr '\n' ' '; }
[[ $(state "$merge") == "PENDING " ]] || fail "the merge job is $(state "$merge")before the array ran"
while [[ -n $(squeue -h -j "$array,$merge" 2>/dev/null) ]]; do
  left
  sleep 1
done
[[ $(state "$array") == "COMPLETED " ]] || fail "array tasks ended $(state "$array")"
[[ $(state "$merge") == "COMPLETED " ]] || fail "merge job ended $(state "$merge")"
for k in 1 2 3; do
  grep -q "slurm-tune: task $k of 3" "$T/sdspeed-tune-${array}_$k.log" || fail "no log of task $k"
done
cat "$T/sdspeed-merge-$merge.log"
one=$(ls "$T"/one/tuned/*.yaml) par=$T/par/tuned/$(basename "$one")
[[ -f $par ]] || fail "the merge wrote no $par"
"$BIN" db compare "$one" "$par" || fail "the merged database differs from the unsharded one"
"$BIN" db compare --sweeps "$T/one/sweeps" "$T/par/sweeps" || fail "the merged sweeps differ from the unsharded one"
[[ $(find "$T/par" -name '*.shard-*' | wc -l) -eq 0 ]] || fail "shard files left after the merge"
echo "PASS: a 3-task Slurm array and its dependent merge = the unsharded run"
