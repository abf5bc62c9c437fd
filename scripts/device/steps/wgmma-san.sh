# shellcheck shell=bash
# h200.sh step `wgmma-san` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The wgmma kernels under compute-sanitizer memcheck: the identity GEMM (every variant), every
# window width (one window per chunk and one per tap), and the small sets of the random shapes and
# planted faults (CONVBENCH_SANITIZER_SMALL); then racecheck and synccheck of the window widths
# (the window ring is rounded in place by the consumer threads between its TMA load and the MMAs)
# and of persistent blocks (the epilogue's tile is filled again for the next tile while the
# producer loads on).
CONVBENCH_SANITIZER_SMALL=1 timeout "$(cap 150)" compute-sanitizer --tool memcheck --error-exitcode 1 \
  "$B"/bin/tc_gpu_tests --gtest_filter='Wgmma.IdentityGemmDecodesEveryCell:Wgmma.EveryWindowWidth:Wgmma.RandomShapesOfBothOps:Wgmma.PlantedFaultsAreCaught:Wgmma.PersistentBlocksEqualOneTileBlocks' \
  >"$W/logs/san-memcheck-wgmma.txt" 2>&1
log "memcheck wgmma: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/logs/san-memcheck-wgmma.txt" | tr '\n' ' ')"
for tool in racecheck synccheck; do
  enough 40 "$tool wgmma windows" || break
  CONVBENCH_SANITIZER_SMALL=1 timeout "$(cap 120)" compute-sanitizer --tool "$tool" --error-exitcode 1 \
    "$B"/bin/tc_gpu_tests --gtest_filter='Wgmma.EveryWindowWidth:Wgmma.PersistentBlocksEqualOneTileBlocks' \
    >"$W/logs/san-$tool-wgmma.txt" 2>&1
  log "$tool wgmma windows and persistent blocks: rc=$? $(grep -E 'SUMMARY|PASSED|FAILED' "$W/logs/san-$tool-wgmma.txt" | tr '\n' ' ')"
done
