#!/bin/bash
# restart.sh: two torchrun agents with --nnodes=2 (fixed), c10d on
# 127.0.0.1, each --nproc_per_node=1, started together; 8 s later both get
# SIGTERM. Prints when the script acted, when both agents were gone, and
# when each worker process started and took its first step (Unix seconds):
# a rescale by restarting every worker is "stopped" minus "stop" plus
# first step minus "start".
cd "$(dirname "$0")"
out=$(mktemp -d)
gen=${1:-1}
rdzv="--nnodes=2 --nproc_per_node=1 --rdzv_backend=c10d --rdzv_endpoint=127.0.0.1:29410 --rdzv_id=restart$gen-$$ --max_restarts=0 --redirects 2 --tee 2"
echo "start $(date +%s.%N)"
torchrun $rdzv step.py >"$out/a.log" 2>&1 & a=$!
torchrun $rdzv step.py >"$out/b.log" 2>&1 & b=$!
sleep 8; echo "stop $(date +%s.%N)"; kill -TERM $a $b; wait $a $b; echo "stopped $(date +%s.%N)"
grep -h "READY\|step=1$" "$out/a.log" "$out/b.log"
