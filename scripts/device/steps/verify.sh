# shellcheck shell=bash
# h200.sh step `verify` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The quick GPU checks of the ceiling arms and the tensor-core plans, before their measurements:
# the ceilings' own gates (each seen failing on its planted fault), the causal pair and the
# ceilings end to end (bench.ops_gpu), the plans' host tests and their cost model's fit.
t0=$(date +%s)
timeout "$(cap 60)" "$B/bin/bench_unit_tests" --gtest_filter='CeilingGate.*' >"$W/logs/ceiling-gate.txt" 2>&1
log "CeilingGate rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/logs/ceiling-gate.txt" | tr '\n' ' ')"
(cd "$B" && timeout "$(cap 240)" ctest -R 'bench.ops_gpu|bench.list|bench.arm_variants|wg_cost_fit|tc.emulation.Plan' \
  --output-on-failure >"$W/logs/verify-ctest.txt" 2>&1)
log "verify ctest rc=$? $(grep -E 'tests passed|tests failed' "$W/logs/verify-ctest.txt")"
grep -E "Failed|\*\*\*" "$W/logs/verify-ctest.txt" | head -5 | tee -a "$W/logs/summary.txt" >&2
log "verify: $(( $(date +%s) - t0 )) s"
