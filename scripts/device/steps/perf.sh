# shellcheck shell=bash
# h200.sh step `perf` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# Our arms against the cuDNN peer on every stage of the three families (resident, queued).
for m in bigvgan_v2_44khz_128band_512x bigvgan_v2_44khz_128band_256x bigvgan_base_22khz_80band; do
  timeout 240 $B/bin/bench_conv --model $m --stage all --frames 96,384,1536 --staging resident --reps 5 \
    --arms cuda-f32,cuda-f64,cuda-f64-fma,cuda-tf32,cuda-f64-dmma,cudnn-f32,cudnn-tf32,cudnn-f64 --no-counters \
    --out "$W/results/perf-$m.json" >"$W/logs/perf-$m.txt" 2>&1; log "perf $m rc=$?"
done
$B/bin/bench_conv --stage up0,up1,up2,up3 --reps 5 --arms cpu-f32 --threads 16 --no-counters \
  --out "$W/results/cpu-f32.json" >"$W/logs/bench-cpu-f32.txt" 2>&1; log "cpu-f32 16 threads rc=$?"
