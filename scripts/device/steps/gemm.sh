# shellcheck shell=bash
# h200.sh step `gemm` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The measured ceilings in the same call as our arms: per family, bench_conv times the arms that
# face them (cuda-tf32, cuda-f32, cuda-f64-dmma) on every stage, then torch_peer.py --gemm
# --beside that record times cuBLAS TF32, BF16, SIMT f32 and f64 on each stage's polyphase GEMM
# (the same multiply-adds); perf_table.py forms each ratio within one such pair only.
# GEMM_STAGES (default all: the upsample stages) may name Conv1d stages too (amp0, pre): their
# ceiling is the implicit GEMM.
# GEMM_MODELS, GEMM_FRAMES and GEMM_ARMS narrow or change the runs (the tensor-core targets:
# GEMM_ARMS=cuda-tf32,cuda-f32x3,cudnn-tf32,cudnn-f32).
# Both sides time the GPU's work: our arms with --device-timing queued (the stream held while a
# call is enqueued), cuBLAS as back-to-back calls of at least 2 ms per sample (torch_peer.py
# --min-time); GEMM_TIMING=launched times ours with the host's launch latency instead.
for m in ${GEMM_MODELS:-bigvgan_v2_44khz_128band_512x bigvgan_v2_44khz_128band_256x bigvgan_base_22khz_80band}; do
  enough 90 "gemm $m" || break
  timeout $(cap "${GEMM_TIMEOUT:-150}") $B/bin/bench_conv --model $m --stage "${GEMM_STAGES:-all}" --frames "${GEMM_FRAMES:-96,384,1536}" --staging resident \
    --reps 5 --no-counters --device-timing "${GEMM_TIMING:-queued}" \
    --arms "${GEMM_ARMS:-cuda-tf32,cuda-f32,cuda-f64-dmma}" --out "$W/results/gemm-ours-$m.json" \
    >"$W/logs/gemm-ours-$m.txt" 2>&1
  log "gemm: our arms $m rc=$?"
  [ -s "$W/results/gemm-ours-$m.json" ] || continue
  timeout $(cap 120) $B/bin/convlease run --gpu 0 -- python3 scripts/torch_peer.py --gemm --no-cpu \
    --beside "$W/results/gemm-ours-$m.json" --convlease $B/bin/convlease \
    --out "$W/results/gemm-$m.json" >"$W/logs/gemm-$m.txt" 2>&1
  log "gemm: cuBLAS ceilings beside them $m rc=$?"
done
python3 scripts/perf_table.py "$W/results"/gemm-ours-*.json $(ls "$W/results"/gemm-bigvgan*.json 2>/dev/null) \
  >"$W/results/gemm-table.md" 2>"$W/logs/gemm-table.err"
rc=$?
log "gemm: perf_table rc=$rc $(head -1 "$W/logs/gemm-table.err")"
