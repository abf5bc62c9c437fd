# shellcheck shell=bash
# h200.sh step `main10` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# Clean runs of the README's main job exactly as written (its twins, counters and lease
# included), back to back, each judged alone; MAIN_RUNS (10) and MAIN_FIRST (1) number them.
first=${MAIN_FIRST:-1}
for i in $(seq "$first" $(( first + ${MAIN_RUNS:-10} - 1 ))); do
  enough 45 "main run $i" || break
  t0=$(date +%s)
  timeout $(cap 70) $B/bin/bench_conv --stage up0 --reps 3 --out "$W/results/main-$i.json" \
    >"$W/logs/main-$i.txt" 2>&1
  rc=$?
  log "main run $i: rc=$rc wall $(( $(date +%s) - t0 )) s report rc=$(report "$W/results/main-$i.json") $(tail -1 "$W/logs/report-main-$i.txt")"
done
