# shellcheck shell=bash
# h200.sh step `compare` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
t0=$(date +%s)
timeout "${COMPARE_TIMEOUT:-1200}" bash scripts/device/comparison.sh $B "$W/results/compare" 2>&1 | tee -a "$W/logs/summary.txt" >&2
log "compare: $(( $(date +%s) - t0 )) s"
