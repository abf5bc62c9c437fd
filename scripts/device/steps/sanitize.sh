# shellcheck shell=bash
# h200.sh steps `sanitize`, `sanitize-splits` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The two sanitizer steps. Asked for together they run side by side (two processes on the one
# GPU), so that both fit one device call.
sanitize_kernels_and_async() {
  for tool in memcheck racecheck; do
    CONVBENCH_SANITIZER_SMALL=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 1 \
      $B/bin/kernels_cuda_tests --gtest_filter='-CudaErrors.*:CudaGrid.*' >"$W/logs/san-$tool-kernels.txt" 2>&1
    log "compute-sanitizer $tool kernels_cuda_tests rc=$? $(grep -E 'SUMMARY|PASSED' "$W/logs/san-$tool-kernels.txt" | tr '\n' ' ')"
  done
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 $B/bin/fast_gpu_tests \
    --gtest_filter='*Random*:*Cancellation*:*Infinite*:*Width*:*SplitsSmall*:*AsyncStagingSmall*' \
    >"$W/logs/san-memcheck-fast.txt" 2>&1
  log "compute-sanitizer memcheck fast_gpu_tests rc=$? $(grep -E 'SUMMARY|PASSED' "$W/logs/san-memcheck-fast.txt" | tr '\n' ' ')"
  timeout 300 compute-sanitizer --tool racecheck --error-exitcode 1 $B/bin/fast_gpu_tests \
    --gtest_filter='*AsyncStagingSmall*' >"$W/logs/san-racecheck-fast-async.txt" 2>&1
  log "compute-sanitizer racecheck fast_gpu_tests (cp.async) rc=$? $(grep -E 'SUMMARY|PASSED' "$W/logs/san-racecheck-fast-async.txt" | tr '\n' ' ')"
}
sanitize_splits() {
  # Racecheck of the fast kernels' exact-property cases and the cluster splits' small shapes
  # (racecheck of the random-shape sets is too slow for one call); CONVBENCH_SANITIZER_SMALL
  # cuts the split test to 4 shapes, every split config still runs.
  CONVBENCH_SANITIZER_SMALL=1 timeout 540 compute-sanitizer --tool racecheck --error-exitcode 1 \
    $B/bin/fast_gpu_tests --gtest_filter='*Cancellation*:*Infinite*:*Width*:*SplitsSmall*' \
    >"$W/logs/san-racecheck-fast.txt" 2>&1
  log "compute-sanitizer racecheck fast_gpu_tests rc=$? $(grep -E 'SUMMARY|PASSED' "$W/logs/san-racecheck-fast.txt" | tr '\n' ' ')"
}
if has sanitize && has sanitize-splits; then
  t0=$(date +%s)
  sanitize_kernels_and_async & p1=$!
  sanitize_splits & p2=$!
  wait $p1 $p2
  log "sanitize + sanitize-splits side by side: $(( $(date +%s) - t0 )) s"
elif has sanitize; then
  sanitize_kernels_and_async
elif has sanitize-splits; then
  sanitize_splits
fi
