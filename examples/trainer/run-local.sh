#!/usr/bin/env bash
# run-local.sh starts a training job on this machine the way Caravan's
# Nomad driver would: NUM_PS parameter servers and NUM_WORKERS workers of
# one generation, sharing a checkpoint directory. It waits for the job to
# finish and prints the chief's last log lines.
#
#   ./run-local.sh [NUM_PS] [NUM_WORKERS] [trainer flags...]
#
# Environment: CKPT (checkpoint directory, default a new temporary one),
# GENERATION (default 1), RESUME (0 or 1), GLOBAL_BATCH (default 64), and
# CARAVAN_* variables, which pass through (e.g. CARAVAN_STEPS_PER_EPOCH,
# CARAVAN_COLLECTOR_ADDR), and TRAINER (a trainer binary; by default the
# script builds one). Logs go to $CKPT/logs/. Ctrl-C stops the job.
set -euo pipefail

num_ps=${1:-1}
num_workers=${2:-2}
shift $(( $# < 2 ? $# : 2 ))

here=$(cd "$(dirname "$0")" && pwd)
bin=${TRAINER:-}
if [[ -z $bin ]]; then
  bin=$(mktemp -d)/trainer
  (cd "$here" && go build -o "$bin" .)
fi

export CARAVAN_JOB_ID=${CARAVAN_JOB_ID:-logreg}
export CARAVAN_NUM_PS=$num_ps
export CARAVAN_NUM_WORKERS=$num_workers
export CARAVAN_CHECKPOINT_DIR=${CKPT:-$(mktemp -d)}
export CARAVAN_GENERATION=${GENERATION:-1}
export CARAVAN_RESUME=${RESUME:-0}
export CARAVAN_GLOBAL_BATCH_SIZE=${GLOBAL_BATCH:-64}
export CARAVAN_LOCAL_BATCH_SIZE=$(( CARAVAN_GLOBAL_BATCH_SIZE / num_workers ))
logs=$CARAVAN_CHECKPOINT_DIR/logs
mkdir -p "$logs"

pids=()
trap 'kill -INT "${pids[@]}" 2>/dev/null; wait' INT TERM
for ((r = 0; r < num_ps; r++)); do
  CARAVAN_ROLE=ps CARAVAN_RANK=$r "$bin" "$@" 2>"$logs/ps-$r.log" &
  pids+=($!)
done
for ((r = num_workers - 1; r >= 0; r--)); do
  CARAVAN_ROLE=worker CARAVAN_RANK=$r "$bin" "$@" 2>"$logs/worker-$r.log" &
  pids+=($!)
done
echo "started $num_ps ps and $num_workers workers; checkpoints in $CARAVAN_CHECKPOINT_DIR, logs in $logs"
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=$?
done
grep -E 'epoch finished|checkpoint written|training finished' "$logs/worker-0.log" | tail -n 4 | cut -c 1-400
exit "$status"
