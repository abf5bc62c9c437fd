# shellcheck shell=bash
# h200.sh step `tensor-counters` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The tensor pipes under the counters (after `build`): which metrics the profiler accepts and
# their passes, what they count on kernels with a known MMA count, the tensor peaks, the
# profiles' tests (the GPU teeth fail rather than skip here), CUPTI beside ncu on one DMMA and
# one wgmma call, the main job with its counters column, and the counters' cost on it.
TP=$B/bin/tensor_probe
timeout $(cap 60) $TP metrics >"$W/results/tensor-metrics.jsonl" 2>"$W/logs/tensor-metrics.err"
log "tensor_probe metrics rc=$? $(grep -hE '"candidates"|"profile"' "$W/results/tensor-metrics.jsonl" | tr '\n' ' ')"
grep -h '"accepted":false' "$W/results/tensor-metrics.jsonl" | cut -c1-200 | tee -a "$W/logs/summary.txt" >&2
timeout $(cap 90) $TP capture >"$W/results/tensor-capture.jsonl" 2>"$W/logs/tensor-capture.err"
log "tensor_probe capture rc=$? (per metric and kernel: value, per PTX MMA, per multiply-add)"
grep -hE '"exact_for"|"instructions_for"' "$W/results/tensor-capture.jsonl" | tee -a "$W/logs/summary.txt" >&2
tail -3 "$W/logs/tensor-capture.err" >&2
if enough 60 "tensor main job"; then
  t0=$(date +%s.%N)
  timeout $(cap 120) $B/bin/bench_conv --stage up0 --reps 3 --out "$W/results/tc-up0.json" \
    >"$W/logs/tc-up0.txt" 2>"$W/logs/tc-up0.err"
  r=$?; w1=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
  log "bench_conv --stage up0 --reps 3 (counters): rc=$r wall ${w1} s; $(grep -c 'bench_conv: counters' "$W/logs/tc-up0.err") captures"
  PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}" python3 -m convbench_analysis report --no-history \
    "$W/results/tc-up0.json" >"$W/logs/tc-report-up0.txt" 2>&1
  log "report (counters column, one line per arm): rc=$?"
  grep -E "^  (cuda|cudnn|cpu)-" "$W/logs/tc-report-up0.txt" | cut -c1-230 | tee -a "$W/logs/summary.txt" >&2
  $B/bin/counter_check "$W/results/tc-up0.json" >"$W/logs/tc-counter-check.txt" 2>&1
  log "counter_check rc=$? $(tr '\n' ';' <"$W/logs/tc-counter-check.txt" | cut -c1-400)"
fi
timeout $(cap 60) $B/bin/tensor_peak >"$W/results/tensor-peak.json" 2>&1
log "tensor_peak rc=$? $(cat "$W/results/tensor-peak.json")"
timeout $(cap 150) ctest --test-dir $B --output-on-failure --timeout 140 -R '^profiles\.' \
  >"$W/logs/ctest-profiles.txt" 2>&1
log "ctest -R ^profiles\\. rc=$? $(grep -E 'tests passed|tests failed' "$W/logs/ctest-profiles.txt" | tail -1)"
grep -E "\*\*\*Failed|\*\*\*Skipped|Not Run|^ *\[  (FAILED|SKIPPED) \]|/96/cuda-(f64-dmma|tf32|f32x3)|^(dmma|hmma|wgmma)_" \
  "$W/logs/ctest-profiles.txt" | cut -c1-260 | head -40 | tee -a "$W/logs/summary.txt" >&2
NM=sm__inst_executed_pipe_tensor_op_dmma.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__ops_path_tensor_src_fp64.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum,sm__pipe_tensor_op_dmma_cycles_active.sum,sm__pipe_tensor_op_hmma_cycles_active.sum
for k in dmma-conv wgmma-conv; do
  enough 40 "ncu $k" || break
  timeout $(cap 60) ncu --clock-control none --csv --page raw --print-units base --metrics $NM \
    $TP launch $k >"$W/results/ncu-$k.csv" 2>"$W/logs/ncu-$k.err"
  r1=$?
  timeout $(cap 30) $TP capture-one $k --metrics $NM >"$W/results/cupti-$k.json" 2>"$W/logs/cupti-$k.err"
  r2=$?
  python3 profiles/tools/ncu_compare.py "$W/results/ncu-$k.csv" "$W/results/cupti-$k.json" \
    >"$W/logs/ncu-compare-$k.txt" 2>&1
  log "ncu beside CUPTI, $k: ncu rc=$r1, CUPTI rc=$r2, compare rc=$? (0: every count equal)"
  tee -a "$W/logs/summary.txt" <"$W/logs/ncu-compare-$k.txt" >&2
done
if enough 60 "tensor overhead"; then
  t0=$(date +%s.%N)
  timeout $(cap 120) $B/bin/bench_conv --stage up0 --reps 3 --no-counters --out "$W/results/tc-up0-nc.json" \
    >"$W/logs/tc-up0-nc.txt" 2>"$W/logs/tc-up0-nc.err"
  r=$?; w2=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
  log "bench_conv --stage up0 --reps 3 --no-counters: rc=$r wall ${w2} s; the counters cost $(awk -v a="${w1:-0}" -v b="$w2" 'BEGIN { printf "%.1f", a - b }') s"
fi
