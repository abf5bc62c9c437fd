# shellcheck shell=bash
# h200.sh step `forward-san` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The forward tile kernel (cp.async staging, cluster reduction) under memcheck and racecheck:
# racecheck first on the width probe (one block, split 1: the staging pipeline), then on the
# smallest cluster (one tile, two ranks), then on the split test (it did not finish in 150 s
# with six shapes, nor in 70 s with one).
CONVBENCH_SANITIZER_SMALL=1 timeout $(cap 60) compute-sanitizer --tool memcheck --error-exitcode 1 \
  $B/bin/kernels_cuda_tests --gtest_filter='CudaForwardTile.*' >"$W/logs/san-memcheck-forward.txt" 2>&1
log "memcheck forward tile: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/logs/san-memcheck-forward.txt" | tr '\n' ' ')"
for f in WidthProbe SmallestClusterForTheSanitizers EverySplitWithinToleranceAndDeterministic; do
  CONVBENCH_SANITIZER_SMALL=1 timeout $(cap 70) compute-sanitizer --tool racecheck --error-exitcode 1 \
    $B/bin/kernels_cuda_tests --gtest_filter="CudaForwardTile.$f" >"$W/logs/san-racecheck-forward-$f.txt" 2>&1
  log "racecheck forward tile $f: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' "$W/logs/san-racecheck-forward-$f.txt" | tr '\n' ' ')"
done
