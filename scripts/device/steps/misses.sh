# shellcheck shell=bash
# h200.sh step `misses` (sourced after ../common.sh: log, cap, enough, B, W, OUT, tree_analysis).
# Every case a record missed a target on, measured again with counters (the sweeps run with
# --no-counters), so that the targets table names what limits it: the records of this call's
# earlier steps, or those under MISSES_FROM (a folder carried in). One bench_conv run per length
# and reference arm (scripts/misses_plan.py), all of them in $OUT/misses.tgz with their table.
from=${MISSES_FROM:-$W/results}
mapfile -t runs < <(python3 scripts/misses_plan.py "$from"/*.json 2>>"$W/logs/summary.txt")
log "misses: ${#runs[@]} runs from $from"
mkdir -p "$W/misses"
i=0
for args in "${runs[@]}"; do
  enough 60 "misses run $i" || break
  eval "set -- $args"
  timeout "$(cap 150)" "$B/bin/bench_conv" "$@" --staging resident --reps 6 --min-time 0.01 \
    --out "$W/misses/misses-$i.json" >"$W/logs/misses-$i.txt" 2>&1
  log "misses run $i ($args): rc=$?"
  i=$((i + 1))
done
if ls "$W"/misses/*.json >/dev/null 2>&1; then
  $A targets "$W"/misses/*.json --format text >"$W/logs/misses-targets.txt" 2>&1
  tail -40 "$W/logs/misses-targets.txt" >>"$W/logs/summary.txt"
  tar -C "$W" -czf "$OUT/misses.tgz" misses
fi
