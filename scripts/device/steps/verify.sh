# shellcheck shell=bash
# h200.sh step `verify` (sourced after ../common.sh: log, cap, enough, B, W, OUT; D from h200.sh).
# The quick GPU checks of the ceiling arms, the causal pair and the tensor-core plans, before
# their measurements: the ceilings' own gates (each seen failing on its planted fault), then under
# memcheck; the causal pair's GPU tests (every tile shape; the device equal to the host emulation
# bit for bit), the state shapes under racecheck; with VERIFY_CTEST=1 the plans' host tests and
# their cost model's fit; last, with VERIFY_OPS=1, the causal pair and the ceilings end to end
# (bench.ops_gpu, minutes: AMP and the generator too).
t0=$(date +%s)
timeout "$(cap 60)" "$B/bin/bench_unit_tests" --gtest_filter='CeilingGate.*' >"$W/logs/ceiling-gate.txt" 2>&1
log "CeilingGate rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/logs/ceiling-gate.txt" | tr '\n' ' ')"
timeout "$(cap 120)" compute-sanitizer --tool memcheck --error-exitcode 1 "$B/bin/bench_unit_tests" \
  --gtest_filter='CeilingGate.*' >"$W/logs/san-memcheck-ceilings.txt" 2>&1
log "memcheck CeilingGate rc=$? $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED) ' "$W/logs/san-memcheck-ceilings.txt" | tr '\n' ' ')"
# The small shapes (every tile shape at its edges, the state shapes); the whole family with
# VERIFY_FAMILY=1 (its host references take minutes).
filter='CausalGpu.DeviceEqualsHostEmulation:CausalGpu.StateShapesRepeatable:CausalGpu.Planted*'
[ -n "${VERIFY_FAMILY:-}" ] && filter='*'
timeout "$(cap 150)" "$B/bin/kernels_causal_gpu_tests" --gtest_filter="$filter" >"$W/logs/causal-gpu.txt" 2>&1
log "causal GPU tests rc=$? $(grep -E 'gates on|^\[  (PASSED|FAILED) ' "$W/logs/causal-gpu.txt" | tr '\n' ' ')"
grep -E "Failure|differ" "$W/logs/causal-gpu.txt" | head -5 | tee -a "$W/logs/summary.txt" >&2
# racecheck of the state shapes (every tile shape) and the planted race: the step causal-race
# shellcheck source=/dev/null
source "$D/steps/causal-race.sh"
if [ -n "${VERIFY_CTEST:-}" ]; then
  (cd "$B" && timeout "$(cap 120)" ctest -R 'bench.list|bench.arm_variants|wg_cost_fit|tc.emulation.Plan' \
    --output-on-failure >"$W/logs/verify-ctest.txt" 2>&1)
  log "verify ctest rc=$? $(grep -E 'tests passed|tests failed' "$W/logs/verify-ctest.txt")"
  grep -E "Failed|\*\*\*" "$W/logs/verify-ctest.txt" | head -5 | tee -a "$W/logs/summary.txt" >&2
fi
if [ -n "${VERIFY_OPS:-}" ]; then
  (cd "$B" && timeout "$(cap 420)" ctest -R 'bench.ops_gpu' --output-on-failure >"$W/logs/verify-ops.txt" 2>&1)
  log "bench.ops_gpu rc=$? $(grep -E 'tests passed|tests failed|Passed|Failed' "$W/logs/verify-ops.txt" | tr '\n' ' ')"
fi
log "verify: $(( $(date +%s) - t0 )) s"
