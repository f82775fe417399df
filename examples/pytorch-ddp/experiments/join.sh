#!/bin/bash
# join.sh MONITOR_INTERVAL: torchrun agent A starts alone (--nnodes=1:2, c10d
# on 127.0.0.1), agent B joins 12 s later and leaves (SIGTERM) 20 s after
# that. Prints when each worker process started and took its first step in
# each group (Unix seconds), beside the times the script acted.
cd "$(dirname "$0")"
m=${1:-5}
out=$(mktemp -d)
rdzv="--nnodes=1:2 --nproc_per_node=1 --rdzv_backend=c10d --rdzv_endpoint=127.0.0.1:2940$m --rdzv_id=join$m --max_restarts=5 --monitor_interval=$m --rdzv_conf last_call_timeout=1 --redirects 2 --tee 2"
echo "A start $(date +%s.%N)"; torchrun $rdzv step.py >"$out/a.log" 2>&1 & a=$!
sleep 12; echo "B start $(date +%s.%N)"; torchrun $rdzv step.py >"$out/b.log" 2>&1 & b=$!
sleep 20; echo "B stop $(date +%s.%N)"; kill -TERM $b; sleep 20; kill -TERM $a; wait
grep -h "READY\|step=1$" "$out/a.log"; echo "-- B"; grep -h "READY\|step=1$" "$out/b.log"
