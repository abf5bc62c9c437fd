# shellcheck shell=bash
# h200.sh step `ncu` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
timeout 300 ncu --clock-control none --nvtx --nvtx-include "convbench@up0/" --metrics gpu__time_duration.sum \
  $B/bin/bench_conv --stage up0 --reps 1 --arms cuda-f32 --staging resident --no-lease --device-timing launched \
  --out "$W/results/under-ncu.json" >"$W/logs/ncu.txt" 2>&1
log "bench under ncu: rc=$? ranges profiled: $(grep -c 'gpu__time_duration' "$W/logs/ncu.txt")"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('under ncu, counters:', [c['counters'].get('status') + ': ' + str(c['counters'].get('message',''))[:120] for c in r['cases'] if c['device']])" \
  "$W/results/under-ncu.json" 2>&1 | tee -a "$W/logs/summary.txt" >&2
