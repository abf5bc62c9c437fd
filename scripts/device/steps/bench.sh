# shellcheck shell=bash
# h200.sh step `bench` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
t0=$(date +%s)
timeout 420 $B/bin/bench_conv --stage chain --frames 96,384,1536 --reps 3 \
  --out "$W/results/chain-sweep.json" >"$W/logs/bench-chain.txt" 2>"$W/logs/bench-chain.err"
log "bench_conv --stage chain --frames 96,384,1536 --reps 3: rc=$? wall $(( $(date +%s) - t0 )) s"
