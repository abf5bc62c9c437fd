# shellcheck shell=bash
# h200.sh step `dmma-san` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The DMMA kernels under compute-sanitizer memcheck and racecheck (the shared-memory pipeline):
# the small sets of the random shapes and the planted faults.
for tool in memcheck racecheck; do
  enough 40 "$tool dmma" || break
  CONVBENCH_SANITIZER_SMALL=1 timeout $(cap 150) compute-sanitizer --tool $tool --error-exitcode 1 \
    $B/bin/tc_gpu_tests --gtest_filter='Dmma.RandomShapesOfBothOps:Dmma.PlantedFaultsAreCaught' \
    >"$W/logs/san-$tool-dmma.txt" 2>&1
  log "$tool dmma: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$W/logs/san-$tool-dmma.txt" | tr '\n' ' ')"
done
