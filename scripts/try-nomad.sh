#!/usr/bin/env bash
# make try-nomad: Caravan on a real Nomad agent, on this machine.
#
#   scripts/try-nomad.sh [JOB_FILE [nomad job run flags...]]
#
# Starts a Nomad dev agent (one server and one client, on loopback, its
# state in a temporary directory) with raw_exec and the fake GPU device
# plugin (e2e/fakegpu, 4 GPUs that do not exist), a Caravan agent with the
# nomad driver pointed at it, and runs JOB_FILE with `nomad job run`:
# by default examples/demo.nomad.hcl, its tasks being the example trainer
# (bin/caravan-trainer, a real SGD program), or any Nomad job file with a
# caravan scaling policy, such as examples/pytorch-ddp/pytorch-ddp.nomad.hcl
# (make try-pytorch). Caravan takes the job over from Nomad and places it
# (optimus, or TRY_ALGORITHM; optimus first profiles a job at a few
# shapes, rescaling it through checkpoints). The script follows the job's
# events until it runs again after a rescale (or completes), prints both
# views of it and the addresses of the two UIs.
# From a terminal (or with DEMO_KEEP=1) everything keeps running until
# Ctrl-C; otherwise, or on any error, it is stopped, the tasks killed and
# the temporary directory removed (DEMO_KEEP_DIR=1 keeps the directory, for
# its logs).
#
# Needs .tools/bin/nomad and .tools/bin/fakegpu (`make tools`), bin/caravan
# (`make build`) and bin/caravan-trainer (`make trainer`); `make try-nomad`
# builds them all. Ports are free loopback ports picked at start.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
caravan=${CARAVAN:-$root/bin/caravan}
trainer=${TRAINER:-$root/bin/caravan-trainer}
nomad=${NOMAD:-$root/.tools/bin/nomad}
fakegpu=${FAKEGPU:-$root/.tools/bin/fakegpu}
timeout=${DEMO_TIMEOUT:-300}
algorithm=${TRY_ALGORITHM:-optimus}
file=${1:-$root/examples/demo.nomad.hcl}
[ $# -gt 0 ] && shift
run_flags=("$@")
# The job's ID is its job block's label.
job=$(sed -n 's/^job "\([^"]*\)".*/\1/p' "$file" | head -n 1)
[ -n "$job" ] || { echo "$file: no job block" >&2; exit 1; }
keep=${DEMO_KEEP:-$([ -t 0 ] && [ -t 1 ] && echo 1 || echo 0)}
keep_dir=${DEMO_KEEP_DIR:-0}

needs=("$caravan" "$nomad" "$fakegpu")
if [ "$(readlink -f "$file")" = "$root/examples/demo.nomad.hcl" ]; then
  needs+=("$trainer")
  # Nomad resolves the trainer as given: make it absolute.
  trainer=$(readlink -f "$trainer")
  run_flags+=(-var "trainer=$trainer")
fi
for f in "${needs[@]}"; do
  [ -x "$f" ] || { echo "missing $f: run make try-nomad (or make tools build trainer)" >&2; exit 1; }
done
# Nomad resolves the plugin as given: make it absolute.
fakegpu=$(readlink -f "$fakegpu")

# free_port prints a loopback port that no TCP or UDP socket uses (ss) and
# that no earlier call printed. Ports come from [10000, 20000), as the e2e
# tests' do (e2e/agent.FreePorts): below the kernel's ephemeral ports,
# which an outgoing connection may take between this check and the
# agent's bind, and below the ports Nomad gives tasks (20000-32000).
taken=" "
free_port() {
  local p
  while :; do
    p=$((10000 + RANDOM % 10000))
    case "$taken" in *" $p "*) continue ;; esac
    if command -v ss >/dev/null; then
      [ -z "$(ss -Htuan "sport = :$p")" ] || continue
    elif (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      continue
    fi
    taken="$taken$p "
    echo "$p"
    return
  done
}
nomad_http=$(free_port); nomad_rpc=$(free_port); nomad_serf=$(free_port)
caravan_http=$(free_port); caravan_raft=$(free_port)
no_consul=$(free_port)
export NOMAD_ADDR=http://127.0.0.1:$nomad_http
export CARAVAN_ADDR=http://127.0.0.1:$caravan_http
unset NOMAD_TOKEN CARAVAN_TOKEN NOMAD_NAMESPACE NOMAD_REGION

# /proc shows resolved paths; the clean-up compares them with dir.
dir=$(readlink -f "$(mktemp -d -t caravan-try-nomad.XXXXXX)")
mkdir -p "$dir/nomad/plugins" "$dir/caravan" "$dir/checkpoints"
# Nomad loads a plugin whose file name matches a plugin block.
ln -s "$fakegpu" "$dir/nomad/plugins/fakegpu"

cat >"$dir/nomad/nomad.hcl" <<EOF
# A Nomad dev agent for make try-nomad: loopback only, state in $dir/nomad.
name       = "try-nomad"
bind_addr  = "127.0.0.1"
data_dir   = "$dir/nomad/data"
plugin_dir = "$dir/nomad/plugins"

ports {
  http = $nomad_http
  rpc  = $nomad_rpc
  serf = $nomad_serf
}

client {
  options = {
    # Cloud metadata endpoints time out on a closed network.
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
}

# Caravan reads the tasks' CPU and memory from the allocation stats API.
telemetry {
  publish_allocation_metrics = true
  collection_interval        = "1s"
}

plugin "raw_exec" {
  config {
    enabled = true
  }
}

# Four GPUs that do not exist (e2e/fakegpu): Nomad fingerprints, schedules
# and reserves them as real ones.
plugin "fakegpu" {
  config {
    count      = 4
    id_prefix  = "fake-gpu"
    model      = "Tesla V100-SXM2-16GB"
    memory_mib = 16384
  }
}

# No Consul here: point Nomad at a port where nothing listens.
consul {
  address = "127.0.0.1:$no_consul"
}
EOF

cat >"$dir/caravan/agent.hcl" <<EOF
# A single Caravan server for make try-nomad, on the Nomad dev agent.
name      = "try-nomad"
data_dir  = "$dir/caravan/data"
bind_addr = "127.0.0.1"
driver    = "nomad"

ports {
  http = $caravan_http
  raft = $caravan_raft
}

server {
  bootstrap_expect = 1
}

nomad {
  address        = "$NOMAD_ADDR"
  # On a shared file system on a real cluster; here the only client's disk.
  checkpoint_dir = "$dir/checkpoints"
}

scheduler {
  algorithm = "$algorithm"
  interval  = "15s"
}

# The examples run their tasks with raw_exec, which Caravan
# denies by default: this cluster trusts whoever submits.
jobs {
  denied_drivers = []
}
EOF

nomad_pid=
caravan_pid=
# stop ends what the script started, newest first, and removes dir.
stop() {
  local code=$?
  trap - EXIT INT TERM
  if [ -n "$caravan_pid" ] && kill -0 "$caravan_pid" 2>/dev/null; then
    kill -INT "$caravan_pid"
    wait "$caravan_pid" 2>/dev/null || true
    echo "==> Caravan agent stopped"
  fi
  if [ -n "$nomad_pid" ] && kill -0 "$nomad_pid" 2>/dev/null; then
    "$nomad" job stop -purge -yes -detach "$job" >/dev/null 2>&1 || true
    kill -INT "$nomad_pid"
    wait "$nomad_pid" 2>/dev/null || true
    echo "==> Nomad agent stopped"
  fi
  # Tasks, executors and plugins that outlived the agent, and the secrets
  # tmpfs Nomad mounts in each task directory when run as root.
  local pid
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$pid" = $$ ] && continue
    if [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$dir"/* ]] ||
      { tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$dir/"; } 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  if [ "$keep_dir" = 1 ]; then
    echo "==> Logs and state kept in $dir"
  else
    rm -rf "$dir"
  fi
  exit "$code"
}
trap stop EXIT
trap 'exit 130' INT TERM

# wait_for WHAT PID COMMAND...: runs COMMAND every 0.2s until it succeeds,
# at most 2 minutes; gives up when PID (the agent it waits on) exits.
wait_for() {
  local what=$1 pid=$2 log=$3
  shift 3
  for _ in $(seq 600); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { echo "the agent exited while waiting for $what:"; tail -n 30 "$log"; exit 1; }
    sleep 0.2
  done
  echo "timed out waiting for $what; the agent's log:"; tail -n 30 "$log"; exit 1
}

started=$SECONDS
echo "==> Starting a Nomad dev agent with raw_exec and 4 fake GPUs at $NOMAD_ADDR (log in $dir/nomad.log)"
"$nomad" agent -dev -config "$dir/nomad/nomad.hcl" >"$dir/nomad.log" 2>&1 &
nomad_pid=$!
gpus_ready() {
  "$nomad" node status -self -verbose 2>/dev/null | grep -q 'fake-gpu-3'
}
wait_for "a ready Nomad client with its fake GPUs" "$nomad_pid" "$dir/nomad.log" gpus_ready
"$nomad" node status

echo
echo "==> Starting a Caravan agent with the nomad driver at $CARAVAN_ADDR (config $dir/caravan/agent.hcl, log in $dir/caravan.log)"
"$caravan" agent -config "$dir/caravan/agent.hcl" >"$dir/caravan.log" 2>&1 &
caravan_pid=$!
caravan_sees_gpus() {
  "$caravan" node status 2>/dev/null | grep -qE 'try-nomad .* 4/4'
}
wait_for "Caravan to see the Nomad node" "$caravan_pid" "$dir/caravan.log" caravan_sees_gpus
"$caravan" server members
echo
"$caravan" node status

echo
echo "==> Checking and running $file with nomad job run ${run_flags[*]}"
"$caravan" job validate "${run_flags[@]}" "$file"
"$nomad" job run -detach "${run_flags[@]}" "$file"

echo
echo "==> Following job $job until it runs again after a rescale or completes (at most ${timeout}s)"
"$caravan" events -follow -job "$job" &
follower=$!
deadline=$((SECONDS + timeout))
outcome=
while [ -z "$outcome" ]; do
  if ! kill -0 "$caravan_pid" 2>/dev/null; then
    echo "the Caravan agent exited:"; tail -n 30 "$dir/caravan.log"; exit 1
  fi
  events=$("$caravan" events -job "$job" 2>/dev/null || true)
  if grep -q JobCompleted <<<"$events"; then
    outcome="completed"
  elif grep -q JobRescaled <<<"$events" && [ "$(grep -c TasksRunning <<<"$events")" -ge 2 ]; then
    outcome="rescaled and running"
  elif grep -qE 'JobFailed|JobRejected|JobStopped' <<<"$events"; then
    outcome="failed"
  elif [ $SECONDS -ge $deadline ]; then
    outcome="timed out"
  else
    sleep 1
  fi
done
kill "$follower" 2>/dev/null || true
wait "$follower" 2>/dev/null || true

echo
echo "==> caravan job status $job ($outcome, $((SECONDS - started))s after start)"
"$caravan" job status "$job"
echo
echo "==> nomad job status $job"
"$nomad" job status "$job"
case "$outcome" in
  "timed out" | failed) exit 1 ;;
esac

cat <<EOF

==> What to look at, from another shell
  export NOMAD_ADDR=$NOMAD_ADDR CARAVAN_ADDR=$CARAVAN_ADDR
  export PATH=$(dirname "$nomad"):$(dirname "$caravan"):\$PATH
  nomad job status $job                   # Caravan's per-node groups in your Nomad job
  nomad alloc logs <alloc> train          # a worker's output (-stderr: its log)
  caravan job status $job                 # what runs beside what was decided; the fitted models
  caravan events -follow -job $job        # placements, checkpoints, rescales
  Caravan's UI: $CARAVAN_ADDR/ui/
  Nomad's UI:   $NOMAD_ADDR/ui/
  The agents' logs: $dir/nomad.log, $dir/caravan.log
EOF
if [ "$keep" = 1 ]; then
  echo "==> Everything keeps running until Ctrl-C"
  wait "$caravan_pid" || true
else
  echo "==> Stopping (DEMO_KEEP=1 keeps the agents running)"
fi
