# shellcheck shell=bash
# h200.sh step `aa` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# A/A coverage: every case timed twice (--twins all) on a large and a small stage, host,
# per-call and resident; AA_RUNS (5) runs, judged together by `calibrate`.
for i in $(seq "${AA_RUNS:-5}"); do
  enough 45 "aa run $i" || break
  timeout $(cap 70) $B/bin/bench_conv --stage up0,up2 --reps 3 --twins all --no-counters \
    --out "$W/results/aa-$i.json" >"$W/logs/aa-$i.txt" 2>&1
  log "aa run $i (--twins all): rc=$? report rc=$(report "$W/results/aa-$i.json") $(tail -1 "$W/logs/report-aa-$i.txt")"
done
$A calibrate "$W"/results/aa-*.json "$W"/results/main-*.json >"$W/logs/calibrate.txt" 2>&1
tail -8 "$W/logs/calibrate.txt" | tee -a "$W/logs/summary.txt" >&2
