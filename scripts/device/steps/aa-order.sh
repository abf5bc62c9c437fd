# shellcheck shell=bash
# h200.sh step `aa-order` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# When cuDNN's A/A twins disagree beyond the tolerance: does the gap follow the order in which
# the instances are prepared (and their buffers allocated), or the instance? The instrument's
# cases as scripts/device/comparison.sh runs them (cuDNN's twins last), then with cuDNN's twins
# first.
for order in last first; do
  arms=cuda-f32,cuda-f32,cuda-f64,cuda-f64,cudnn-f32,cudnn-f32
  [ $order = first ] && arms=cudnn-f32,cudnn-f32,cuda-f32,cuda-f32,cuda-f64,cuda-f64
  timeout 150 $B/bin/bench_conv --stage up0,up1,up2 --frames 96 --staging resident --reps 9 \
    --arms $arms --out "$W/results/instrument-cudnn-$order.json" >"$W/logs/instrument-cudnn-$order.txt" 2>&1
  log "instrument, cuDNN's twins $order: rc=$?"
  PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}" python3 -m convbench_analysis report \
    "$W/results/instrument-cudnn-$order.json" --baseline cuda-f32/resident 2>&1 | sed -n '/A\/A twins/,$p' \
    | tee -a "$W/logs/summary.txt" >&2
done
