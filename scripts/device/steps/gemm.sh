# shellcheck shell=bash
# h200.sh step `gemm` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The measured ceilings in the same run as our arms: per family, bench_conv times the arms that
# face them (cuda-tf32, cuda-f32, cuda-f64-dmma) and the cuBLAS ceiling arms (cublas-tf32,
# cublas-bf16, cublas-sgemm, cublas-dgemm: each stage's polyphase GEMM, the same multiply-adds)
# in the same interleaved rounds under the same lease; the report states each arm's "% of
# cuBLAS" and perf-table the targets, every ratio within one record.
# GEMM_STAGES (default all: the upsample stages) may name Conv1d stages too (amp0, pre): their
# ceiling is the implicit GEMM. GEMM_MODELS, GEMM_FRAMES and GEMM_ARMS narrow or change the runs
# (the tensor-core targets: GEMM_ARMS=cuda-tf32,cuda-f32x3,cudnn-tf32,cudnn-f32).
# Both sides time the GPU's work (--device-timing queued; GEMM_TIMING=launched for the host's view).
ceilings=cublas-tf32,cublas-bf16,cublas-sgemm,cublas-dgemm
A="python3 -m convbench_analysis"
export PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}"
for m in ${GEMM_MODELS:-bigvgan_v2_44khz_128band_512x bigvgan_v2_44khz_128band_256x bigvgan_base_22khz_80band}; do
  enough 90 "gemm $m" || break
  timeout $(cap "${GEMM_TIMEOUT:-150}") $B/bin/bench_conv --model $m --stage "${GEMM_STAGES:-all}" \
    --frames "${GEMM_FRAMES:-96,384,1536}" --staging resident --reps 5 --no-counters \
    --device-timing "${GEMM_TIMING:-queued}" --arms "${GEMM_ARMS:-cuda-tf32,cuda-f32,cuda-f64-dmma},$ceilings" \
    --out "$W/results/gemm-$m.json" >"$W/logs/gemm-$m.txt" 2>&1
  log "gemm: our arms and the cuBLAS ceilings, one run, $m rc=$?"
  [ -s "$W/results/gemm-$m.json" ] || continue
  $A report --no-history "$W/results/gemm-$m.json" >"$W/logs/report-gemm-$m.txt" 2>&1
  log "gemm: report $m rc=$?"
done
$A perf-table --doc "$W/results"/gemm-*.json >"$W/results/gemm-table.md" 2>"$W/logs/gemm-table.err"
log "gemm: perf-table rc=$? $(head -1 "$W/logs/gemm-table.err")"
