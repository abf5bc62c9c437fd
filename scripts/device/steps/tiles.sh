# shellcheck shell=bash
# h200.sh step `tiles` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The wgmma kernels' tile sweep: every column tile and split of cuda-tf32 (and cuda-f32x3 with
# TILE_ARMS) as a hidden arm of its own beside the arm's own choice, on a few stages; the table
# says, per case, the plan's choice and time against the best variant's.
timeout $(cap "${TILE_TIMEOUT:-200}") $B/bin/bench_conv --stage "${TILE_STAGES:-up0,up3,amp0.k7.d1}" \
  --frames "${TILE_FRAMES:-96,1536}" --staging resident --reps 3 --min-time 0.02 --no-counters \
  --arms "${TILE_ARMS:-cuda-tf32,cuda-tf32@*}" --out "$W/results/tiles.json" >"$W/logs/tiles.txt" 2>"$W/logs/tiles.err"
log "tile sweep: rc=$?"
PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}" python3 -m convbench_analysis tile-table "$W/results/tiles.json" 2>&1 | tee -a "$W/logs/summary.txt" >&2
