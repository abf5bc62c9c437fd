# shellcheck shell=bash
# h200.sh step `queued` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The queue hold itself (unit tests), then the instrument's cases (A/A twins, 9 rounds) timed
# both ways in one call: CV and A/A per mode, and what the launch gaps cost each arm.
$B/bin/bench_unit_tests --gtest_filter='QueueHold.*' >"$W/logs/queue-hold.txt" 2>&1
log "bench_unit_tests QueueHold rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/logs/queue-hold.txt" | tr '\n' ' ')"
for timing in queued launched; do
  timeout 120 $B/bin/bench_conv --stage up0,up1,up2 --frames 96 --staging resident --reps 9 --no-counters \
    --arms cuda-f32,cuda-f32,cuda-f64,cuda-f64,cudnn-f32,cudnn-f32 --device-timing $timing \
    --out "$W/results/instrument-$timing.json" >"$W/logs/instrument-$timing.txt" 2>&1
  log "instrument --device-timing $timing: rc=$?"
done
timeout 200 python3 bench/tests/e2e.py gpu_run "$PWD/$B/bin/bench_conv" "$PWD/results/result.schema.json" \
  >"$W/logs/e2e-gpu-run.txt" 2>&1
log "e2e gpu_run (launched and queued) rc=$? $(tail -1 "$W/logs/e2e-gpu-run.txt")"
