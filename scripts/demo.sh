#!/usr/bin/env bash
# make demo: Caravan's whole loop on the embedded simulated cluster.
#
# Starts `caravan agent -dev` (one server, in-memory state, a simulated
# 4 x 4-GPU cluster, A100s and V100s, running DEMO_SPEED times faster than
# the wall clock),
# submits every example jobspec, follows the events (placements, rescales,
# completions) until the demo job completes, prints a summary, and ends
# with the address of the web UI. From a terminal (or with DEMO_KEEP=1) the
# agent keeps running for the UI until Ctrl-C; otherwise it is stopped with
# SIGINT, as a user would.
set -euo pipefail

bin=${CARAVAN:-bin/caravan}
port=${DEMO_PORT:-4680}
speed=${DEMO_SPEED:-30}
timeout=${DEMO_TIMEOUT:-300}
keep=${DEMO_KEEP:-$([ -t 0 ] && [ -t 1 ] && echo 1 || echo 0)}
export CARAVAN_ADDR=http://127.0.0.1:$port

log=$(mktemp -t caravan-demo.XXXXXX.log)
echo "==> Starting caravan agent -dev (simulated cluster at ${speed}x; log in $log)"
"$bin" agent -dev -dev-speed "$speed" -http-port "$port" -raft-port $((port + 1)) >"$log" 2>&1 &
agent=$!
stop_agent() {
  if kill -0 "$agent" 2>/dev/null; then
    kill -INT "$agent"
    wait "$agent" || true
    echo "==> Agent stopped"
  fi
}
trap stop_agent EXIT

# The scheduler configuration exists once the first leader took over.
for _ in $(seq 100); do
  "$bin" operator scheduler get-config >/dev/null 2>&1 && break
  kill -0 "$agent" 2>/dev/null || { echo "agent exited:"; cat "$log"; exit 1; }
  sleep 0.1
done
"$bin" server members

echo
echo "==> Submitting the examples"
for f in examples/*.hcl; do
  case "$f" in *.nomad.hcl) continue ;; esac # Nomad job files, for nomad job run
  "$bin" job run -detach "$f"
done

echo
echo "==> Following the cluster's events until the demo job completes (at most ${timeout}s)"
"$bin" events -follow -until-done demo -timeout "${timeout}s"

echo
echo "==> Summary"
"$bin" job status
echo
"$bin" job status demo
echo
"$bin" job history demo

ui="http://127.0.0.1:$port/ui/"
echo
if [ "$keep" = 1 ]; then
  echo "==> The jobs, their loss curves and the cluster are in the UI at $ui (Ctrl-C stops the agent)"
  trap 'stop_agent; exit 0' INT TERM
  wait "$agent" || true
else
  stop_agent
  trap - EXIT
  echo "==> The UI was at $ui (DEMO_KEEP=1 keeps the agent running for it)"
fi
