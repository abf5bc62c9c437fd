# shellcheck shell=bash
# h200.sh step `dmma` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The fp64 tensor-core rate (devices.json's fp64_dmma_flops), then the DMMA kernels' device gates
# (every tile and split, random shapes, planted faults) and cuda-f64-dmma on every stage of
# DMMA_MODELS at 96/384/1536 frames beside its floor.
timeout $(cap 60) $B/bin/tensor_peak >"$W/results/tensor-peak.json" 2>"$W/logs/tensor-peak.err"
log "tensor_peak rc=$? $(cat "$W/results/tensor-peak.json" "$W/logs/tensor-peak.err")"
timeout $(cap "${DMMA_TIMEOUT:-240}") $B/bin/tc_gpu_tests --gtest_filter="${DMMA_FILTERS:-Dmma.*}" >"$W/logs/tc-dmma.txt" 2>&1
log "tc_gpu_tests ${DMMA_FILTERS:-Dmma.*} rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/logs/tc-dmma.txt" | tr '\n' ' ')"
grep -E "Failure|ulp off|not caught|\[ +(OK|FAILED) +\]" "$W/logs/tc-dmma.txt" | head -40 | tee -a "$W/logs/summary.txt" >&2
for m in ${DMMA_MODELS:-bigvgan_v2_44khz_128band_512x}; do
  enough 60 "dmma $m" || break
  timeout $(cap "${DMMA_BENCH_TIMEOUT:-150}") $B/bin/bench_conv --model $m --stage all --frames 96,384,1536 --staging resident \
    --reps 3 --no-counters --arms cuda-f64-dmma --out "$W/results/dmma-$m.json" >"$W/logs/dmma-$m.txt" 2>&1
  log "dmma bench $m rc=$?"
done
