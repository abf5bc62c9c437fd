# shellcheck shell=bash
# h200.sh step `gpu-tests` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
for t in kernels_cuda_tests kernels_causal_gpu_tests fast_gpu_tests tc_gpu_tests cudnn_peer_tests cublas_gemm_tests \
         profiles_gpu_tests arm_counters_gpu_tests tensor_counters_gpu_tests bench_cudnn_algo_tests \
         bench_multi_gpu_tests; do
  [ -x "$B/bin/$t" ] || { log "$t: not built"; continue; }
  enough 40 "$t" || continue
  timeout $(cap 300) "$B/bin/$t" >"$W/logs/$t.txt" 2>&1
  log "$t rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/logs/$t.txt" | tr '\n' ' ')"
done
grep -hE "^(up[0-9]|pre|amp0\.k7\.d3|post)/96/cuda" "$W/logs/arm_counters_gpu_tests.txt" | tee -a "$W/logs/summary.txt" >&2
