# shellcheck shell=bash
# h200.sh step `counters` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
$B/bin/bench_conv --stage up0,up1,up2,up3 --reps 3 --arms cuda-f64,cuda-f64-fma,cuda-f32 \
  --out "$W/results/counters.json" >"$W/logs/bench-counters.txt" 2>"$W/logs/bench-counters.err"
log "bench_conv counters run: rc=$?"; cat "$W/logs/bench-counters.txt" >&2
$B/bin/counter_check "$W/results/counters.json" >"$W/logs/counter_check.txt" 2>&1
log "counter_check rc=$? $(tail -1 "$W/logs/counter_check.txt")"
