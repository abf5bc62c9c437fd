# shellcheck shell=bash
# h200.sh step `tests` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# etcd is not installed on the GPU machine (nothing can be installed there): its tests run on CI.
# etcd and Slurm are not installed on the GPU machine (nothing can be installed there): their
# tests run on CI.
# The GPU test binaries' own cases run in the gpu-tests step (one process each, minutes less
# than one process per case under ctest's GPU lock); here everything else, the end-to-end GPU
# tests included. All of it once took about 500 s in one call: run tests and gpu-tests in two.
# TESTS_R narrows the call to some tests (e.g. '^(bench|profiles|scripts)\.': the ones that run
# the device arms; the host-only kernel tests run on CI as well).
timeout $(cap 400) ctest --test-dir $B --output-on-failure -j12 --timeout 300 ${TESTS_R:+-R "$TESTS_R"} \
  -E 'etcd|slurm|^kernels\.cuda\.|^kernels\.causal_gpu\.|^fast\.gpu\.|^tc\.gpu\.|^cudnn\.|^cublas\.' >"$W/logs/ctest.txt" 2>&1
log "ctest (all but etcd, slurm and the GPU binaries' cases) rc=$? $(grep -E 'tests passed|tests failed' "$W/logs/ctest.txt" | tail -1)"
grep -E "\*\*\*Failed|\*\*\*Skipped|Not Run" "$W/logs/ctest.txt" | head -20 >&2
