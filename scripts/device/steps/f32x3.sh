# shellcheck shell=bash
# h200.sh step `f32x3` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# cuda-f32x3 beside cuda-f32 and cudnn-f32 on the four large upsample stages at 96 and 1536
# frames: each gate's relative L2 against cpu-f64 (f32x3 should be no worse than cuda-f32's)
# and the times.
timeout $(cap 150) $B/bin/bench_conv --stage up0,up1,up2,up3 --frames 96,1536 --staging resident \
  --arms cuda-f32,cuda-f32x3,cuda-tf32,cudnn-f32 --reps 5 --no-counters --out "$W/results/f32x3.json" \
  >"$W/logs/f32x3.txt" 2>&1
log "f32x3: rc=$? report rc=$(report "$W/results/f32x3.json")"
grep -E "gate .*(cuda-f32|cuda-f32x3|cuda-tf32)/resident" "$W/logs/f32x3.txt" | sed 's/.*gate //' | tee -a "$W/logs/summary.txt" >&2
grep -E "^  (cuda-f32x3|cuda-f32|cudnn-f32)/resident /" "$W/logs/report-f32x3.txt" | tee -a "$W/logs/summary.txt" >&2
