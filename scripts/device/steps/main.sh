# shellcheck shell=bash
# h200.sh steps `bench`, `main` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The main job first: it is short, and the step that every device call should leave a record of.
t0=$(date +%s)
timeout $(cap 120) $B/bin/bench_conv --stage up0 --reps 3 --out "$W/results/up0.json" >"$W/logs/bench-up0.txt" 2>"$W/logs/bench-up0.err"
log "bench_conv --stage up0 --reps 3: rc=$? wall $(( $(date +%s) - t0 )) s"; cat "$W/logs/bench-up0.txt" >&2
python3 -c "import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))); print('schema: valid')" \
  "$W/results/up0.json" results/result.schema.json 2>&1 | tail -1 | tee -a "$W/logs/summary.txt" >&2
PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}" python3 -m convbench_analysis report --no-history \
  "$W/results/up0.json" >"$W/logs/report-up0.txt" 2>&1
log "report up0: rc=$?"; tail -40 "$W/logs/report-up0.txt" >&2
