# shellcheck shell=bash
# h200.sh step `algo` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
for a in 'bwd_data_algo_0' 'bwd_data_algo_1 (tensor-op math)'; do
  n=${a:14:1}
  timeout $(cap 40) $B/bin/bench_conv --stage up3 --arms cudnn-tf32 --staging resident --reps 6 --target-ci 0 \
    --no-counters --cudnn-algo "$a" --out "$W/results/algo-$n.json" >"$W/logs/algo-$n.txt" 2>&1
done
$A report --no-history "$W/results/algo-0.json" "$W/results/algo-1.json" >"$W/logs/report-algo.txt" 2>&1
log "two pinned cuDNN algorithms: report rc=$? $(grep -c config-changed "$W/logs/report-algo.txt") config-changed"
