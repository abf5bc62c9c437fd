# shellcheck shell=bash
# h200.sh step `causal-race` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
timeout $(cap 120) compute-sanitizer --tool racecheck --error-exitcode 1 $B/bin/kernels_causal_gpu_tests \
  --gtest_filter='*StateShapes*:*Planted*' >"$W/logs/san-racecheck-causal.txt" 2>&1
log "racecheck causal state shapes + planted in-place: rc=$? $(grep -E 'SUMMARY|PASSED|FAILED|cells differ' "$W/logs/san-racecheck-causal.txt" | tr '\n' ' ')"
