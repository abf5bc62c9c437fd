# shellcheck shell=bash
# h200.sh step `fwd-fma` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# cuda-f64-fma on the forward Conv1d stages (the simple kernel with one __fma_rn per tap): its
# gate against cpu-f64 must be bitwise, as cuda-f64's.
timeout $(cap 120) $B/bin/bench_conv --stage pre,amp0.k7.d3,post --arms cuda-f64,cuda-f64-fma --staging resident \
  --reps 3 --target-ci 0 --no-counters --out "$W/results/fwd-fma.json" >"$W/logs/fwd-fma.txt" 2>&1
log "forward cuda-f64-fma: rc=$? $(grep -c 'pass (bitwise' "$W/logs/fwd-fma.txt") bitwise passes, $(grep -c FAIL "$W/logs/fwd-fma.txt") failures"
