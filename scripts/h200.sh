#!/usr/bin/env bash
# The one script for the GPU machine (H200): build from source for sm_90, run the GPU tests, the
# sanitizers and the benchmarks, and leave logs and result JSON under $OUT (default ./out).
# Usage: scripts/h200.sh [STEP...]   steps: build tests sanitize bench lease ncu perf (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
# The device tool returns at most 8 files: everything is written under $W and packed at the end.
W=${W:-/tmp/h200}
rm -rf "$W"; mkdir -p "$OUT" "$W/logs" "$W/results"
steps=${*:-build tests sanitize bench lease ncu perf}
has() { [[ " $steps " == *" $1 "* ]]; }
log() { echo "== $*" | tee -a "$W/logs/summary.txt" >&2; }
B=build-h200
export PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1

# jsonschema is not in the GPU image: carried as wheels (see README, GPU machine).
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >/dev/null 2>&1 && export PYTHONPATH=/tmp/site
fi

if has build; then
  { nvidia-smi; nvcc --version; nproc; } >"$W/logs/machine.txt" 2>&1
  t0=$(date +%s)
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    >"$W/logs/configure.txt" 2>&1 || { log "configure FAILED"; tail -30 "$W/logs/configure.txt"; }
  cmake --build $B -j16 >"$W/logs/build.txt" 2>&1 || { log "build FAILED"; grep -m20 -B2 -A8 "error" "$W/logs/build.txt"; }
  log "build: $(( $(date +%s) - t0 )) s"
fi

if has tests; then
  timeout 420 ctest --test-dir $B --output-on-failure -j4 --timeout 300 >"$W/logs/ctest.txt" 2>&1
  log "ctest rc=$? $(grep -E 'tests passed|tests failed' "$W/logs/ctest.txt" | tail -1)"
  grep -E "Failed|\*\*\*" "$W/logs/ctest.txt" | head -20 >&2
  for t in $B/bin/*_cuda_tests $B/bin/*gpu_tests $B/bin/cudnn_tests $B/bin/fast_kernels_tests; do
    [ -x "$t" ] || continue
    timeout 300 "$t" >"$W/logs/$(basename "$t").txt" 2>&1
    log "$(basename "$t") rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/logs/$(basename "$t").txt" | tr '\n' ' ')"
  done
fi

if has sanitize; then
  export CONVBENCH_SANITIZER_SMALL=1
  for tool in memcheck racecheck; do
    for t in $B/bin/kernels_cuda_tests $B/bin/fast_kernels_tests; do
      [ -x "$t" ] || continue
      timeout 240 compute-sanitizer --tool $tool --error-exitcode 1 "$t" \
        >"$W/logs/sanitize-$tool-$(basename "$t").txt" 2>&1
      log "compute-sanitizer $tool $(basename "$t") rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/logs/sanitize-$tool-$(basename "$t").txt" | tail -1)"
    done
  done
  unset CONVBENCH_SANITIZER_SMALL
fi

if has bench; then
  t0=$(date +%s)
  $B/bin/bench_conv --stage up0 --reps 3 --out "$W/results/up0.json" >"$W/logs/bench-up0.txt" 2>"$W/logs/bench-up0.err"
  log "bench_conv --stage up0 --reps 3: rc=$? wall $(( $(date +%s) - t0 )) s"; cat "$W/logs/bench-up0.txt" >&2
  t0=$(date +%s)
  timeout 400 $B/bin/bench_conv --stage chain --frames 96,384,1536 --reps 3 --arms cuda-f64,cuda-f32,cpu-f32 \
    --out "$W/results/chain-sweep.json" >"$W/logs/bench-chain.txt" 2>"$W/logs/bench-chain.err"
  log "bench_conv chain sweep: rc=$? wall $(( $(date +%s) - t0 )) s"
fi

if has lease; then
  python3 -c "import torch,time; x=torch.ones(1,device='cuda'); time.sleep(40)" &
  fg=$!; sleep 8
  $B/bin/bench_conv --stage up1 --reps 3 --arms cuda-f32 --no-counters --out "$W/results/foreign-gpu.json" \
    >"$W/logs/bench-foreign.txt" 2>&1
  log "bench under a foreign CUDA context: rc=$? (expect 3, verdict void)"
  kill $fg 2>/dev/null; wait $fg 2>/dev/null
fi

if has ncu; then
  timeout 300 ncu --clock-control none --nvtx --nvtx-include "convbench@up0/" --metrics gpu__time_duration.sum \
    $B/bin/bench_conv --stage up0 --reps 1 --arms cuda-f32 --staging resident --out "$W/results/under-ncu.json" \
    >"$W/logs/ncu.txt" 2>&1
  log "bench under ncu: rc=$? kernels profiled: $(grep -c 'gpu__time_duration' "$W/logs/ncu.txt")"
fi

if has perf; then
  [ -x $B/bin/fast_kernels_bench ] && timeout 120 $B/bin/fast_kernels_bench >"$W/logs/fast-bench.txt" 2>&1
  timeout 180 python3 scripts/torch_peer.py --out "$W/results/torch-peer.json" >"$W/logs/torch-peer.txt" 2>&1
  log "torch peer rc=$?"
fi

tar -C "$W" -czf "$OUT/h200.tgz" logs results
cp "$W/logs/summary.txt" "$OUT/"
cat "$W/logs/summary.txt"
