# shellcheck shell=bash
# h200.sh step `cpu` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# cpu-f32 (each instruction set this CPU has, cpu-f32@*) against PyTorch's CPU
# conv_transpose1d at 16 threads, in turns, 3 rounds of each: torch's times on this machine
# swing from round to round, so one run of each is no comparison.
for r in 1 2 3; do
  timeout 150 $B/bin/bench_conv --stage up0,up1,up2,up3 --frames 96 --reps 15 --threads 16 \
    --arms 'cpu-f32,cpu-f32@*' --no-counters --out "$W/results/cpu-f32-r$r.json" >"$W/logs/cpu-f32-r$r.txt" 2>&1
  log "cpu-f32 round $r rc=$?"
  timeout 150 $B/bin/convlease run -- python3 scripts/torch_peer.py --threads 16 --frames 96 --reps 20 \
    --convlease $B/bin/convlease --out "$W/results/torch-cpu-r$r.json" >"$W/logs/torch-cpu-r$r.txt" 2>&1
  log "torch cpu round $r rc=$?"
done
