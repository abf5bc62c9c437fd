# shellcheck shell=bash
# h200.sh step `ops` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The forward Conv1d stages and the causal op on the GPU: AMP block 0 with the cuDNN peers at
# 96 and 1536 frames (OPS_FRAMES narrows them), the generator at 96 (every f32/f64 arm) and at
# 1536 (f32 arms: four arms' buffers there would need ~62 GiB of host memory), the torch dump
# check (the causal family is its own step, below). cpu-f64's register tile makes the 1536-frame gates seconds, not minutes.
for f in ${OPS_FRAMES:-96 1536}; do
  enough 60 "amp0/$f" || break
  timeout $(cap 200) $B/bin/bench_conv --stage amp0 --frames $f --arms cuda-f32,cudnn-f32,cuda-f64,cudnn-f64,cuda-tf32,cudnn-tf32 \
    --staging resident --reps 5 --no-counters --out "$W/results/amp0-$f.json" >"$W/logs/amp0-$f.txt" 2>&1
  log "amp0 / $f: rc=$? report rc=$(report "$W/results/amp0-$f.json")"
done
timeout $(cap 90) $B/bin/bench_conv --stage amp0.k7.d3,post,causal.c1024.l64.state,causal.c2048.l1024.b8 --reps 1 --target-ci 0 \
  --no-counters --no-lease --dump "$W/dump" --out "$W/results/dump.json" >"$W/logs/dump.txt" 2>&1
log "dump: rc=$?"
timeout $(cap 120) python3 scripts/torch_dump_check.py "$W/dump" >"$W/logs/torch-dump-check.txt" 2>&1
log "torch dump check: rc=$? $(tail -1 "$W/logs/torch-dump-check.txt")"
rm -rf "$W/dump"
timeout $(cap 150) $B/bin/bench_conv --stage generator --frames 96 --arms cuda-f32,cudnn-f32,cuda-f64,cudnn-f64 \
  --staging resident --reps 3 --target-ci 0 --no-counters --out "$W/results/generator-96.json" >"$W/logs/generator-96.txt" 2>&1
log "generator / 96: rc=$?"
if enough 120 "generator/1536"; then
  timeout $(cap 300) $B/bin/bench_conv --stage generator --frames 1536 --arms cuda-f32,cudnn-f32 --staging resident \
    --reps 3 --target-ci 0 --no-counters --out "$W/results/generator-1536.json" >"$W/logs/generator-1536.txt" 2>&1
  log "generator / 1536: rc=$?"
fi
