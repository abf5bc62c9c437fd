# shellcheck shell=bash
# h200.sh step `wgmma` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The wgmma kernels' device gates: the identity GEMM first (a wrong tile layout, descriptor or
# shift names the cell it read), then the other Wgmma tests, then every tensor-core arm's gates
# (TcGpu); WGMMA_FILTERS replaces the two after the identity GEMM. When the identity GEMM fails,
# the steps after this one are skipped: they would time a kernel that computes the wrong thing
# (its gate would refuse it anyway).
for f in 'Wgmma.IdentityGemmDecodesEveryCell' ${WGMMA_FILTERS:-'Wgmma.*:-Wgmma.IdentityGemmDecodesEveryCell' 'TcGpu.*'}; do
  enough 40 "tc_gpu_tests $f" || break
  n=$(echo "$f" | cut -d: -f1 | tr -c 'A-Za-z0-9\n' '_')
  timeout $(cap "${WGMMA_TIMEOUT:-240}") $B/bin/tc_gpu_tests --gtest_filter="$f" >"$W/logs/tc-$n.txt" 2>&1
  rc=$?
  log "tc_gpu_tests $f rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/logs/tc-$n.txt" | tr '\n' ' ')"
  grep -E "Failure|\] = |worst|rel-L2|not caught|\[ +(OK|FAILED) +\]" "$W/logs/tc-$n.txt" | head -40 | tee -a "$W/logs/summary.txt" >&2
  if [ $rc != 0 ] && [ "$f" = Wgmma.IdentityGemmDecodesEveryCell ]; then
    log "the identity GEMM failed: the steps after wgmma are skipped"
    tar -C "$W" -czf "$OUT/h200.tgz" logs results; exit 1
  fi
done
