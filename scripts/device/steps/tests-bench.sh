# shellcheck shell=bash
# h200.sh step `tests-bench` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
timeout 200 ctest --test-dir $B --output-on-failure -j4 --timeout 150 -L 'bench|lease' -E etcd \
  >"$W/logs/ctest-bench-lease.txt" 2>&1
log "ctest -L 'bench|lease' (no etcd) rc=$? $(grep -E 'tests passed|tests failed' "$W/logs/ctest-bench-lease.txt" | tail -1)"
grep -E "\*\*\*Failed|\*\*\*Skipped|Not Run" "$W/logs/ctest-bench-lease.txt" | head -20 >&2
