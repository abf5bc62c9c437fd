# shellcheck shell=bash
# h200.sh step `cpu` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# cpu-f32 (each instruction set this CPU has, cpu-f32@*) at 16 threads, 3 runs a few seconds
# apart: the host arms' times on this machine swing from run to run, so one run is no comparison.
for r in 1 2 3; do
  timeout 150 $B/bin/bench_conv --stage up0,up1,up2,up3 --frames 96 --reps 15 --threads 16 \
    --arms 'cpu-f32,cpu-f32@*' --no-counters --out "$W/results/cpu-f32-r$r.json" >"$W/logs/cpu-f32-r$r.txt" 2>&1
  log "cpu-f32 round $r rc=$?"
done
