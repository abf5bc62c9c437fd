# shellcheck shell=bash
# h200.sh step `sweep` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# Every compiled block shape of the fast kernel as an arm of its own (cuda-f32@t128-c8-k16-u16
# ...), gated against cpu-f64 like its arm and timed by the one engine on every vocoder stage;
# then the tuning table from those records, and what it changes.
if [ -x $B/bin/fast_gpu_tests ]; then
  timeout 200 $B/bin/fast_gpu_tests --gtest_filter='*EveryConfig*:*ClusterSplits*:*AsyncStaging*' >"$W/logs/fast-configs.txt" 2>&1
  log "fast_gpu_tests EveryConfig rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/logs/fast-configs.txt" | tr '\n' ' ')"
fi
# One run per model, length and accumulator: a run keeps every case's buffers resident from its
# gate to its end, so the device must hold them all (bench_conv refuses a plan that would not
# fit). SWEEP_MODELS / SWEEP_FRAMES narrow a call when the whole sweep needs several; each
# call's tuned_configs.inc is the committed table with the rows it swept re-chosen (commit it
# to carry the next call on; a full sweep's records without --update also re-choose kFallback).
# SWEEP_ACC narrows the accumulators (f32, f64), SWEEP_F64_ARMS the f64 arms.
for m in ${SWEEP_MODELS:-bigvgan_v2_44khz_128band_512x bigvgan_v2_44khz_128band_256x bigvgan_base_22khz_80band}; do
  for f in ${SWEEP_FRAMES:-96 384 1536}; do
    for acc in ${SWEEP_ACC:-f32 f64}; do
      arms='cuda-f32@t*' # the block shapes (cuda-f32@fwd-*: the forward tile's plans, tune fwd)
      [ $acc = f64 ] && arms=${SWEEP_F64_ARMS:-'cuda-f64@*,cuda-f64-fma@*'}
      enough 40 "sweep $m $f $acc" || continue
      timeout $(cap "${SWEEP_TIMEOUT:-300}") $B/bin/bench_conv --model $m --stage all --frames $f \
        --staging resident --reps "${SWEEP_REPS:-3}" --min-time 0.02 --no-counters --arms "$arms" \
        --out "$W/results/sweep-$m-$f-$acc.json" >"$W/logs/sweep-$m-$f-$acc.txt" 2>"$W/logs/sweep-$m-$f-$acc.err"
      log "sweep $m $f $acc rc=$? (4 = some block failed its gate)"
    done
  done
done
# --update: the rows these records cover re-chosen, the table's others kept; each changed row
# named with the old block's time over the new one's.
python3 kernels/fast/tools/fast_tuning.py --update kernels/fast/src/tuned_configs.inc "$W/results"/sweep-*.json \
  >"$W/results/tuned_configs.inc" 2>"$W/logs/fast-tuning.err"
log "fast_tuning rc=$? $(tr '\n' ';' <"$W/logs/fast-tuning.err")"
diff kernels/fast/src/tuned_configs.inc "$W/results/tuned_configs.inc" >"$W/logs/tuning-diff.txt"
log "tuning table: $(grep -c '^>.*Arm::' "$W/logs/tuning-diff.txt") rows differ (logs/tuning-diff.txt)"
