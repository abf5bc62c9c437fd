# shellcheck shell=bash
# What every step of scripts/h200.sh shares, sourced once before the first step (the working
# directory is the repository's root): where logs and records go (W, OUT), the build (B), the
# deadline and its helpers (log, left, cap, enough, has), the carried wheels on PYTHONPATH.
OUT=${OUT:-$PWD/out}
W=${W:-/tmp/h200}
# Logs and results of this call only (a warm machine keeps /tmp between calls).
rm -rf "$W/logs" "$W/results"
mkdir -p "$OUT" "$W/logs" "$W/results"
# shellcheck disable=SC2154 # steps: the names asked for, set by h200.sh
has() { [[ " $steps " == *" $1 "* ]]; }
log() { echo "== $*" | tee -a "$W/logs/summary.txt" >&2; cp "$W/logs/summary.txt" "$OUT/" 2>/dev/null; }
# One device call may run 600 s: every step's timeout is capped by what is left of DEADLINE_S
# (seconds from the start; the archive is written with 25 s to spare), and a step that would
# start with under a minute left is skipped, saying so.
T_START=$(date +%s)
DEADLINE=$(( T_START + ${DEADLINE_S:-570} ))
left() { echo $(( DEADLINE - $(date +%s) )); }
cap() { local l=$(( $(left) - 25 )); (( l < $1 )) && echo $(( l > 1 ? l : 1 )) || echo "$1"; }
enough() { (( $(left) > ${1:-60} )) || { log "skipped $2: $(left) s left"; return 1; }; }
B=${B:-build-h200} # B=build: binaries built elsewhere for sm_90 and carried (cpu, gpu-tests)
export PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1 CONVBENCH_EXPECT_GPU=1

# jsonschema is not in the GPU image: carried as wheels in .whl/ (README, "The GPU machine").
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >/dev/null 2>&1 && export PYTHONPATH=/tmp/site
fi

# The second wave's measurements on the H200 (each step is one block of a device call) read their
# records with the analysis of this tree: set up before the first of them, as the steps before
# them ran without it.
tree_analysis() {
  A="python3 -m convbench_analysis"
  export PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}"
  report() { $A report --no-history "$@" >"$W/logs/report-$(basename "${1%.json}").txt" 2>&1; echo $?; }
}
