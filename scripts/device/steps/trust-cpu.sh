# shellcheck shell=bash
# h200.sh step `trust-cpu` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# What pinning does to the host arms: 16 and 8 threads, pinned and not, three runs each in
# turns, and one thread on up3; then the table (convbench-analyze host-table).
for r in 1 2 3; do for p in pin nopin; do for t in 16 8; do
  enough 40 "cpu $p t$t r$r" || break 3
  x=""; [ $p = nopin ] && x=--no-pin
  timeout $(cap 60) $B/bin/bench_conv --stage up0,up1,up2,up3 --arms cpu-f64,cpu-f32 --threads $t $x --reps 5 \
    --target-ci 0 --no-counters --no-lease --out "$W/results/cpu-$p-t$t-r$r.json" >"$W/logs/cpu-$p-t$t-r$r.txt" 2>&1
done; done; done
for p in pin nopin; do
  x=""; [ $p = nopin ] && x=--no-pin
  timeout $(cap 60) $B/bin/bench_conv --stage up3 --arms cpu-f64,cpu-f32 --threads 1 $x --reps 5 --target-ci 0 \
    --no-counters --no-lease --out "$W/results/cpu1-$p.json" >"$W/logs/cpu1-$p.txt" 2>&1
done
PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}" python3 -m convbench_analysis host-table "$W"/results/cpu-*.json "$W"/results/cpu1-*.json 2>&1 | tee -a "$W/logs/summary.txt" >&2
