# shellcheck shell=bash
# h200.sh step `amp` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# Every AMP Conv1d of the 512x model (54 distinct convolutions), cuda-f32 beside cudnn-f32, at 96 and
# 1536 frames (AMP_FRAMES): the forward target, one ratio per convolution. AMP_ARMS adds arms (the
# tensor-core targets on the AMP convs: cuda-tf32,cuda-f32x3,cuda-f32,cudnn-tf32,cudnn-f32).
for f in ${AMP_FRAMES:-96 1536}; do
  enough 60 "amp/$f" || break
  timeout $(cap "${AMP_TIMEOUT:-240}") $B/bin/bench_conv --stage amp --frames $f --arms "${AMP_ARMS:-cuda-f32,cudnn-f32}" --staging resident \
    --reps 5 --no-counters --out "$W/results/amp-$f.json" >"$W/logs/amp-$f.txt" 2>&1
  log "amp / $f: rc=$? report rc=$(report "$W/results/amp-$f.json")"
  grep -E "cuda-f32/resident / cudnn-f32/resident" "$W/logs/report-amp-$f.txt" | awk '$4 ~ /^[0-9.]+$/ {print $4}' | sort -g |
    awk '{v[NR]=$1} END {if (NR) printf "  cuda-f32/cudnn-f32 over %d accepted ratios: min %s median %s max %s\n", NR, v[1], v[int((NR+1)/2)], v[NR]}' |
    tee -a "$W/logs/summary.txt" >&2
done
