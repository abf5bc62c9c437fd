# shellcheck shell=bash
# h200.sh step `limits` (sourced after ../common.sh: log, cap, enough, B, W, OUT, report).
# The causal pair at the hardware's limits: the largest shape (C 2048, L 8192, batch 8) against the
# device copy of the same bytes, and the decode step (L = 1) against an empty kernel launch, each
# with the ceiling arms (LIMITS_CEILINGS, default cuda-copy,cuda-launch; set empty for none),
# resident, one record.
cases=causal.c2048.l8192.b8,causal.c2048.l8192.b8.state,causal.c4096.l1024.b8
cases=$cases,causal.c2048.l1.b1,causal.c2048.l1.b8.state,causal.c8192.l1.b8.state
ceilings=${LIMITS_CEILINGS-cuda-copy,cuda-launch}
arms=cuda-causal-register,cuda-causal-tiled${ceilings:+,$ceilings}
if enough 60 limits; then
  timeout "$(cap 150)" "$B/bin/bench_conv" --stage "$cases" --arms "$arms" --staging resident \
    --reps 6 --no-counters --out "$W/results/limits.json" >"$W/logs/limits.txt" 2>&1
  log "limits: rc=$? report rc=$(report "$W/results/limits.json")"
  cp "$W/results/limits.json" "$W/logs/limits.txt" "$OUT/" 2>/dev/null
fi
