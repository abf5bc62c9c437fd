# shellcheck shell=bash
# h200.sh step `persist` (sourced after ../common.sh: log, cap, enough, B, W, OUT, tree_analysis).
# The positions-on-M kernels' persistent blocks against one tile per block (the plan's own tile
# both ways: cuda-tf32@persistent / @one-tile, cuda-f32x3@...) beside the plans and cudnn-f32 on
# the AMP Conv1d of blocks 4 and 5 (PERSIST_STAGES, PERSIST_FRAMES: default 96 and 384), where
# the tiles are small and many, and the plan's tile with at most 2 or 3 pipeline buffers
# (@stages2, @stages3: a smaller block, room for a second; PERSIST_ARMS): the tile table to the
# summary (where the plan's choice between the two is within 5% of the better), the record to
# $OUT. What it finds sets the plan's rules (wg_plan.cpp: persistent blocks only where forced;
# the most buffers that hold the most blocks).
timeout "$(cap 240)" "$B/bin/bench_conv" --stage "${PERSIST_STAGES:-amp4,amp5}" --frames "${PERSIST_FRAMES:-96,384}" \
  --staging resident --reps 3 --min-time 0.02 --no-counters --twins none \
  --arms "${PERSIST_ARMS:-cuda-f32x3,cuda-f32x3@persistent,cuda-f32x3@one-tile,cuda-f32x3@stages2,cuda-f32x3@stages3,cuda-tf32,cuda-tf32@persistent,cuda-tf32@one-tile,cuda-tf32@stages3,cudnn-f32}" \
  --out "$W/results/persist.json" >"$W/logs/persist.txt" 2>&1
log "persist: rc=$?"
python3 -m convbench_analysis tile-table "$W/results/persist.json" 2>&1 | tee -a "$W/logs/summary.txt" >&2
gzip -c "$W/results/persist.json" >"$OUT/persist.json.gz" 2>/dev/null
