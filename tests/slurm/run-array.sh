#!/usr/bin/env bash
# A real Slurm cluster on this machine: installs Debian's slurm-wlm
# and munge if missing, starts a one-node cluster (munged, slurmctld, slurmd), submits
# sweeps/slurm-array.sbatch as a 3-task array over a small sweep, cancels one task
# mid-run (scancel) and resubmits it with --resume, and passes only when
# `metachron check` says the dataset is complete and clean. Stops every daemon it
# started. Needs root (daemons, packages); uses the release binary.
#
#   tests/slurm/run-array.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

say() { echo "[slurm-test] $*"; }
fail() { say "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (starts munged, slurmctld and slurmd)"

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    say "installing slurm-wlm and munge"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q slurm-wlm munge >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null && apt-get install -y -q slurm-wlm munge >/dev/null; }
fi

cargo build --release --quiet
BIN_DIR="$ROOT/target/release"
[ -x "$BIN_DIR/metachron" ] || fail "no release binary at $BIN_DIR/metachron"

WORK=$(mktemp -d /tmp/metachron-slurm.XXXXXX)
HOST=$(hostname -s)
STARTED=()
PASSED=no
cleanup() {
    set +e
    [ -n "${SLURM_CONF:-}" ] && scancel --quiet --user=root >/dev/null 2>&1
    # Stop only the daemons this script started, by their pid, newest first.
    for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do
        pidfile=${STARTED[$i]}
        if [ -s "$pidfile" ]; then
            pid=$(cat "$pidfile")
            kill "$pid" 2>/dev/null
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null
        fi
    done
    if [ "$PASSED" = yes ]; then rm -rf "$WORK"; else say "logs kept in $WORK"; fi
}
trap cleanup EXIT

# --- munge: its own socket and key, so a system munged (if any) is left alone.
mkdir -p "$WORK/munge" && chmod 700 "$WORK/munge"
dd if=/dev/urandom of="$WORK/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$WORK/munge/munge.key"
MUNGE_SOCKET="$WORK/munge/munge.socket"
/usr/sbin/munged --force --key-file="$WORK/munge/munge.key" --socket="$MUNGE_SOCKET" \
    --pid-file="$WORK/munge/munged.pid" --log-file="$WORK/munge/munged.log" \
    --seed-file="$WORK/munge/munged.seed"
STARTED+=("$WORK/munge/munged.pid")

# --- a one-node cluster with 2 CPUs, everything under $WORK.
mkdir -p "$WORK/state" "$WORK/spool" "$WORK/log"
export SLURM_CONF="$WORK/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=metachron-ci
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=ci Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
/usr/sbin/slurmctld -c
STARTED+=("$WORK/slurmctld.pid")
/usr/sbin/slurmd
STARTED+=("$WORK/slurmd.pid")

for _ in $(seq 60); do
    state=$(sinfo -h -o %T 2>/dev/null | head -1 || true)
    [ "$state" = idle ] && break
    sleep 0.5
done
[ "$state" = idle ] || { tail -20 "$WORK/log/slurmctld.log" "$WORK/log/slurmd.log"; fail "node not idle (state '$state')"; }
say "cluster up: node $HOST, $(sinfo -h -o '%c CPUs, partition %P')"

# --- the sweep: 36 points, 3 shards of 12, one point per part (~0.2 s each on one
# core: long enough for the cancel to land while the task still runs).
SWEEP="$WORK/array.toml"
cat >"$SWEEP" <<'EOF'
name = "slurm-array-ci"
[base]
t_final = 20.0
[[axes]]
param = "alpha"
logspace = { start = 50.0, stop = 5000.0, num = 6 }
[[axes]]
param = "beta"
logspace = { start = 50.0, stop = 5000.0, num = 6 }
EOF
OUT="$WORK/dataset"
export PATH="$BIN_DIR:$PATH"
# One CPU per task so all three run at once on the 2-CPU node... two at once, and the
# third when one ends: either way, every task is its own shard.
submit() {
    sbatch --parsable --cpus-per-task=1 --time=00:10:00 --output="$WORK/log/task-%A_%a.log" \
        "$@" sweeps/slurm-array.sbatch "$SWEEP" "$OUT"
}
export METACHRON_BATCH=1
JOB=$(submit --array=0-2)
say "submitted array job $JOB (3 tasks)"

# Cancel task 1 once it has written a part and while it still runs.
cancelled=no
for _ in $(seq 600); do
    parts=$( (find "$OUT/shard=1" -name 'part-*.parquet' 2>/dev/null || true) | wc -l)
    if [ "$parts" -ge 1 ] && squeue -h -j "${JOB}_1" -t RUNNING 2>/dev/null | grep -q .; then
        scancel "${JOB}_1"
        cancelled=yes
        say "cancelled task ${JOB}_1 after $parts of its 12 parts"
        break
    fi
    sleep 0.1
done
[ "$cancelled" = yes ] || fail "task 1 could not be caught mid-run"

wait_job() {
    for _ in $(seq 1200); do
        squeue -h -j "$1" 2>/dev/null | grep -q . || return 0
        sleep 0.25
    done
    fail "job $1 did not finish"
}
wait_job "$JOB"
if metachron check "$OUT" >/dev/null; then
    fail "the dataset is complete although task 1 was cancelled"
fi
say "after the cancel: $( (metachron check "$OUT" || true) | grep -E 'missing|complete' | head -1 | sed 's/^ *//')"

# Resubmit only task 1 (shard 1 of 3), resuming.
RESUB=$(METACHRON_SHARDS=3 submit --array=1)
say "resubmitted task 1 as job $RESUB"
wait_job "$RESUB"

for f in "$WORK"/log/task-*.log; do
    if grep -q "^error" "$f"; then
        cat "$f"
        fail "a task reported an error ($f)"
    fi
done
if ! metachron check "$OUT"; then
    fail "metachron check: dataset not complete and clean"
fi
PASSED=yes
say "PASS: 3-task array, one task cancelled and resumed, dataset complete and clean"
