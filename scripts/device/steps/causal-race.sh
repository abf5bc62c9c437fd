# shellcheck shell=bash
# h200.sh step `causal-race` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# racecheck of the causal state shapes and the planted in-place state, then racecheck and memcheck
# of every tile (decode 256 x 4, short 64 x 16, mid 64 x 64, long) against the host emulation.
timeout "$(cap 120)" compute-sanitizer --tool racecheck --error-exitcode 1 "$B"/bin/kernels_causal_gpu_tests \
  --gtest_filter='*StateShapes*:*Planted*' >"$W/logs/san-racecheck-causal.txt" 2>&1
log "racecheck causal state shapes + planted in-place: rc=$? $(grep -E 'SUMMARY|PASSED|FAILED|cells differ' "$W/logs/san-racecheck-causal.txt" | tr '\n' ' ')"
for tool in racecheck memcheck; do
  enough 40 "$tool causal tiles" || break
  timeout "$(cap 120)" compute-sanitizer --tool "$tool" --error-exitcode 1 "$B"/bin/kernels_causal_gpu_tests \
    --gtest_filter='CausalGpu.DeviceEqualsHostEmulation' >"$W/logs/san-$tool-causal-tiles.txt" 2>&1
  log "$tool causal tiles: rc=$? $(grep -E 'SUMMARY|PASSED|FAILED' "$W/logs/san-$tool-causal-tiles.txt" | tr '\n' ' ')"
done
