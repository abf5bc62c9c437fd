# shellcheck shell=bash
# h200.sh step `wgmma-san` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The wgmma kernels under compute-sanitizer memcheck: the identity GEMM (every variant) and the
# small sets of the random shapes and planted faults (CONVBENCH_SANITIZER_SMALL).
CONVBENCH_SANITIZER_SMALL=1 timeout $(cap 150) compute-sanitizer --tool memcheck --error-exitcode 1 \
  $B/bin/tc_gpu_tests --gtest_filter='Wgmma.IdentityGemmDecodesEveryCell:Wgmma.RandomShapesOfBothOps:Wgmma.PlantedFaultsAreCaught' \
  >"$W/logs/san-memcheck-wgmma.txt" 2>&1
log "memcheck wgmma: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/logs/san-memcheck-wgmma.txt" | tr '\n' ' ')"
