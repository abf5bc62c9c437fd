#!/usr/bin/env bash
# The one script for the GPU machine (H200): build from source for sm_90, run every test (the GPU
# ones included), the sanitizers, the benchmarks and the performance comparison, and leave logs
# and result records under $OUT (one archive, h200.tgz, and the summary). Every timing is a
# bench_conv run (the one measurement engine) or torch_peer.py's records of PyTorch.
# Usage: scripts/h200.sh [STEP...]
#   steps: build tests gpu-tests tests-bench sanitize sanitize-splits bench counters lease ncu perf
#          compare sweep queued ncu-f32 ncu-f64 main gemm cpu aa-order
#   (main: the README's main job alone, `bench_conv --stage up0 --reps 3`; bench adds the chain
#   sweep; ncu-f32: ncu of one cuda-f32 and one cudnn-f32 launch on 512x up0 at 96 and 1536
#   frames; ncu-f64: ncu of one cuda-f64 launch on its tuned block, 512x up0 at 96 and 384
#   frames and 256x up0/96; default: all but main, ncu-f32, ncu-f64, gpu-tests, the GPU test
#   binaries alone (tests runs them after ctest), tests-bench, the bench and lease subset of
#   tests, sweep, the fast kernels' block-shape sweep (records -> scripts/fast_tuning.py), queued, --device-timing queued against launched on the instrument's cases, and gemm,
#   cuBLAS SGEMM / DGEMM on every stage's polyphase GEMM: the measured ceiling of the floor targets;
#   wgmma, wgmma-san, tiles, ncu-tc: the wgmma kernels' device tests, memcheck of them, their tile
#   sweep, ncu of their kernels; dmma, dmma-san: the fp64 tensor-core rate (dmma_peak), the DMMA
#   kernels' device tests and cuda-f64-dmma on every stage, memcheck and racecheck of them;
#   main10, aa, faults, trust-cpu, plugin, algo, amp, forward-san, causal-race, ops, causal, f32x3: the ten clean
#   main-job runs, A/A runs with every case twinned (calibrate's coverage), the four injected faults, pinning at 16/8/1 threads, the plugin arms beside
#   cuDNN, two pinned cuDNN algorithms, cuda-f32 beside cudnn-f32 on every AMP Conv1d (AMP_FRAMES),
#   the forward tile kernel under the sanitizers, racecheck of the causal state shapes, the forward
#   Conv1d stages and the torch dump check (OPS_FRAMES), the causal family, cuda-f32x3's accuracy and time, fwd-fma:
#   cuda-f64-fma's bitwise gate on the forward stages; tensor-counters: the tensor-pipe counters
#   (tensor_probe's metrics and units, tensor_peak, the profiles' tests, ncu beside CUPTI on one
#   DMMA and one wgmma call, the main job's counters column and the counters' cost on its wall);
#   cpu, cpu-f32 (and each of its instruction sets) and PyTorch's CPU op in turns, 3 rounds; aa-order, the instrument's cases with
#   cuDNN's A/A twins listed last, then first; queue: a holder and three --lease-wait contenders
#   on the GPU plus one refused at once, nvidia-smi sampled, the four records judged)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
W=${W:-/tmp/h200}
# Logs and results of this call only (a warm machine keeps /tmp between calls).
rm -rf "$W/logs" "$W/results"
mkdir -p "$OUT" "$W/logs" "$W/results"
steps=${*:-build tests sanitize sanitize-splits bench counters lease ncu perf compare}
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

if has build; then
  { nvidia-smi; nvcc --version; nproc; lscpu | grep -E "Model name"; echo "ISA flags: $(grep -m1 -ow -E 'avx2|fma|avx512f|avx512vl|avx512_fp16|avx512_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"; } >"$W/logs/machine.txt" 2>&1
  t0=$(date +%s)
  # CLI11 (header-only) and OpenSSL's headers are not in the GPU image: where missing, the
  # Debian packages' headers carried in .devdeps/ (git-ignored) are used, and the image's own
  # libcrypto.so.3 is linked.
  extra=()
  if [ ! -e /usr/include/CLI/CLI.hpp ] && [ ! -e /usr/local/include/CLI/CLI.hpp ] && [ -d .devdeps/cli11 ]; then
    extra+=(-DCMAKE_PREFIX_PATH="$PWD/.devdeps/cli11"); echo "CLI11 from .devdeps" >>"$W/logs/machine.txt"
  fi
  if [ ! -e /usr/include/openssl/sha.h ] && [ -d .devdeps/openssl ]; then
    crypto=$(ldconfig -p | awk '/libcrypto\.so\.3 .*x86-64/ {print $NF; exit}')
    extra+=(-DOPENSSL_INCLUDE_DIR="$PWD/.devdeps/openssl/include" -DOPENSSL_CRYPTO_LIBRARY="$crypto")
    echo "OpenSSL headers from .devdeps, $crypto" >>"$W/logs/machine.txt"
  fi
  command -v ccache >/dev/null && extra+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 "${extra[@]}" \
    >"$W/logs/configure.txt" 2>&1 || { log "configure FAILED"; tail -30 "$W/logs/configure.txt"; }
  cmake --build $B -j16 >"$W/logs/build.txt" 2>&1 || { log "build FAILED"; grep -m20 -B2 -A8 "error" "$W/logs/build.txt"; }
  log "build: $(( $(date +%s) - t0 )) s"
fi

# The main job first: it is short, and the step that every device call should leave a record of.
if has bench || has main; then
  t0=$(date +%s)
  timeout $(cap 120) $B/bin/bench_conv --stage up0 --reps 3 --out "$W/results/up0.json" >"$W/logs/bench-up0.txt" 2>"$W/logs/bench-up0.err"
  log "bench_conv --stage up0 --reps 3: rc=$? wall $(( $(date +%s) - t0 )) s"; cat "$W/logs/bench-up0.txt" >&2
  python3 -c "import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))); print('schema: valid')" \
    "$W/results/up0.json" results/result.schema.json 2>&1 | tail -1 | tee -a "$W/logs/summary.txt" >&2
  PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}" python3 -m convbench_analysis report --no-history \
    "$W/results/up0.json" >"$W/logs/report-up0.txt" 2>&1
  log "report up0: rc=$?"; tail -40 "$W/logs/report-up0.txt" >&2
fi
if has tests; then
  # etcd is not installed on the GPU machine (nothing can be installed there): its tests run on CI.
  # etcd and Slurm are not installed on the GPU machine (nothing can be installed there): their
  # tests run on CI.
  # The GPU test binaries' own cases run in the gpu-tests step (one process each, minutes less
  # than one process per case under ctest's GPU lock); here everything else, the end-to-end GPU
  # tests included. All of it once took about 500 s in one call: run tests and gpu-tests in two.
  # TESTS_R narrows the call to some tests (e.g. '^(bench|profiles|scripts)\.': the ones that run
  # the device arms; the host-only kernel tests run on CI as well).
  timeout $(cap 400) ctest --test-dir $B --output-on-failure -j12 --timeout 300 ${TESTS_R:+-R "$TESTS_R"} \
    -E 'etcd|slurm|^kernels\.cuda\.|^kernels\.causal_gpu\.|^fast\.gpu\.|^tc\.gpu\.|^cudnn\.' >"$W/logs/ctest.txt" 2>&1
  log "ctest (all but etcd, slurm and the GPU binaries' cases) rc=$? $(grep -E 'tests passed|tests failed' "$W/logs/ctest.txt" | tail -1)"
  grep -E "\*\*\*Failed|\*\*\*Skipped|Not Run" "$W/logs/ctest.txt" | head -20 >&2
fi

if has gpu-tests; then
  for t in kernels_cuda_tests kernels_causal_gpu_tests fast_gpu_tests tc_gpu_tests cudnn_peer_tests \
           profiles_gpu_tests arm_counters_gpu_tests tensor_counters_gpu_tests bench_cudnn_algo_tests \
           bench_multi_gpu_tests; do
    [ -x "$B/bin/$t" ] || { log "$t: not built"; continue; }
    enough 40 "$t" || continue
    timeout $(cap 300) "$B/bin/$t" >"$W/logs/$t.txt" 2>&1
    log "$t rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/logs/$t.txt" | tr '\n' ' ')"
  done
  grep -hE "^(up[0-9]|pre|amp0\.k7\.d3|post)/96/cuda" "$W/logs/arm_counters_gpu_tests.txt" | tee -a "$W/logs/summary.txt" >&2
fi

if has tests-bench; then
  timeout 200 ctest --test-dir $B --output-on-failure -j4 --timeout 150 -L 'bench|lease' -E etcd \
    >"$W/logs/ctest-bench-lease.txt" 2>&1
  log "ctest -L 'bench|lease' (no etcd) rc=$? $(grep -E 'tests passed|tests failed' "$W/logs/ctest-bench-lease.txt" | tail -1)"
  grep -E "\*\*\*Failed|\*\*\*Skipped|Not Run" "$W/logs/ctest-bench-lease.txt" | head -20 >&2
fi

# The two sanitizer steps. Asked for together they run side by side (two processes on the one
# GPU), so that both fit one device call.
sanitize_kernels_and_async() {
  for tool in memcheck racecheck; do
    CONVBENCH_SANITIZER_SMALL=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 1 \
      $B/bin/kernels_cuda_tests --gtest_filter='-CudaErrors.*:CudaGrid.*' >"$W/logs/san-$tool-kernels.txt" 2>&1
    log "compute-sanitizer $tool kernels_cuda_tests rc=$? $(grep -E 'SUMMARY|PASSED' "$W/logs/san-$tool-kernels.txt" | tr '\n' ' ')"
  done
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 $B/bin/fast_gpu_tests \
    --gtest_filter='*Random*:*Cancellation*:*Infinite*:*Width*:*SplitsSmall*:*AsyncStagingSmall*' \
    >"$W/logs/san-memcheck-fast.txt" 2>&1
  log "compute-sanitizer memcheck fast_gpu_tests rc=$? $(grep -E 'SUMMARY|PASSED' "$W/logs/san-memcheck-fast.txt" | tr '\n' ' ')"
  timeout 300 compute-sanitizer --tool racecheck --error-exitcode 1 $B/bin/fast_gpu_tests \
    --gtest_filter='*AsyncStagingSmall*' >"$W/logs/san-racecheck-fast-async.txt" 2>&1
  log "compute-sanitizer racecheck fast_gpu_tests (cp.async) rc=$? $(grep -E 'SUMMARY|PASSED' "$W/logs/san-racecheck-fast-async.txt" | tr '\n' ' ')"
}
sanitize_splits() {
  # Racecheck of the fast kernels' exact-property cases and the cluster splits' small shapes
  # (racecheck of the random-shape sets is too slow for one call); CONVBENCH_SANITIZER_SMALL
  # cuts the split test to 4 shapes, every split config still runs.
  CONVBENCH_SANITIZER_SMALL=1 timeout 540 compute-sanitizer --tool racecheck --error-exitcode 1 \
    $B/bin/fast_gpu_tests --gtest_filter='*Cancellation*:*Infinite*:*Width*:*SplitsSmall*' \
    >"$W/logs/san-racecheck-fast.txt" 2>&1
  log "compute-sanitizer racecheck fast_gpu_tests rc=$? $(grep -E 'SUMMARY|PASSED' "$W/logs/san-racecheck-fast.txt" | tr '\n' ' ')"
}
if has sanitize && has sanitize-splits; then
  t0=$(date +%s)
  sanitize_kernels_and_async & p1=$!
  sanitize_splits & p2=$!
  wait $p1 $p2
  log "sanitize + sanitize-splits side by side: $(( $(date +%s) - t0 )) s"
elif has sanitize; then
  sanitize_kernels_and_async
elif has sanitize-splits; then
  sanitize_splits
fi

if has bench; then
  t0=$(date +%s)
  timeout 420 $B/bin/bench_conv --stage chain --frames 96,384,1536 --reps 3 \
    --out "$W/results/chain-sweep.json" >"$W/logs/bench-chain.txt" 2>"$W/logs/bench-chain.err"
  log "bench_conv --stage chain --frames 96,384,1536 --reps 3: rc=$? wall $(( $(date +%s) - t0 )) s"
fi

if has counters; then
  $B/bin/bench_conv --stage up0,up1,up2,up3 --reps 3 --arms cuda-f64,cuda-f64-fma,cuda-f32 \
    --out "$W/results/counters.json" >"$W/logs/bench-counters.txt" 2>"$W/logs/bench-counters.err"
  log "bench_conv counters run: rc=$?"; cat "$W/logs/bench-counters.txt" >&2
  $B/bin/counter_check "$W/results/counters.json" >"$W/logs/counter_check.txt" 2>&1
  log "counter_check rc=$? $(tail -1 "$W/logs/counter_check.txt")"
fi

if has lease; then
  python3 -c "import torch,time; x=torch.ones(1,device='cuda'); torch.cuda.synchronize(); time.sleep(120)" &
  tp=$!
  for i in $(seq 60); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . && break; sleep 1; done
  $B/bin/bench_conv --stage up1 --reps 3 --arms cuda-f32 --no-counters --out "$W/results/foreign-gpu.json" \
    >"$W/logs/bench-foreign.txt" 2>&1
  log "bench under a foreign CUDA context: rc=$? (expect 3)"
  $B/bin/convlease run --gpu 0 -- $B/bin/bench_conv --stage up1 --reps 3 --arms cuda-f32 --no-counters \
    --out "$W/results/foreign-gpu-convlease.json" >"$W/logs/bench-foreign-convlease.txt" 2>&1
  log "same under convlease run: rc=$? (expect 3)"
  kill $tp 2>/dev/null; wait $tp 2>/dev/null
  python3 - "$W/results" <<'PY' 2>&1 | tee -a "$W/logs/summary.txt" >&2
import json, sys
for n in ("foreign-gpu", "foreign-gpu-convlease"):
    try:
        L = json.load(open(f"{sys.argv[1]}/{n}.json"))["lease"]
        print(n, L["verdict"], "|", "; ".join(L["reasons"])[:400])
    except Exception as e:
        print(n, "no result:", e)
PY
fi

if has ncu; then
  timeout 300 ncu --clock-control none --nvtx --nvtx-include "convbench@up0/" --metrics gpu__time_duration.sum \
    $B/bin/bench_conv --stage up0 --reps 1 --arms cuda-f32 --staging resident --no-lease --device-timing launched \
    --out "$W/results/under-ncu.json" >"$W/logs/ncu.txt" 2>&1
  log "bench under ncu: rc=$? ranges profiled: $(grep -c 'gpu__time_duration' "$W/logs/ncu.txt")"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('under ncu, counters:', [c['counters'].get('status') + ': ' + str(c['counters'].get('message',''))[:120] for c in r['cases'] if c['device']])" \
    "$W/results/under-ncu.json" 2>&1 | tee -a "$W/logs/summary.txt" >&2
fi

if has ncu-f32; then
  # What limits cuda-f32, and what cuDNN's kernel does on the same case: one launch each (the
  # first timed one; launch 0 is the correctness gate's), 512x up0 at 96 and 1536 frames.
  for f in 96 1536; do
    for a in cuda-f32:polyphase cudnn-f32:dgrad; do
      timeout 150 ncu --clock-control none -k "regex:${a#*:}" --launch-skip 1 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section SchedulerStats --section InstructionStats --section ComputeWorkloadAnalysis \
        --metrics smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active \
        $B/bin/bench_conv --stage up0 --frames $f --arms ${a%%:*} --staging resident --reps 1 --min-time 0.001 \
        --no-counters --no-lease --device-timing launched --out "$W/results/ncu-$f-${a%%:*}.json" >"$W/logs/ncu-f32-$f-${a%%:*}.txt" 2>&1
      log "ncu ${a%%:*} up0/$f rc=$? $(grep -E '^  [a-z_]+.*(polyphase|dgrad)|Issue Slots Busy|Achieved Occupancy|Registers Per|pipe_fma_cycles' "$W/logs/ncu-f32-$f-${a%%:*}.txt" | tr -s ' ' | head -6 | tr '\n' ';')"
    done
  done
fi

if has ncu-f64; then
  # What limits cuda-f64 on the block its tuning chose (the case's kernel block names it): the
  # first timed launch (launch 0 is the correctness gate's).
  for mf in bigvgan_v2_44khz_128band_512x:96 bigvgan_v2_44khz_128band_512x:384 bigvgan_v2_44khz_128band_256x:96; do
    m=${mf%%:*} f=${mf#*:}
    timeout 120 ncu --clock-control none -k regex:polyphase --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis \
      --metrics sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum \
      $B/bin/bench_conv --model $m --stage up0 --frames $f --arms cuda-f64 --staging resident --reps 1 \
      --min-time 0.001 --no-counters --no-lease --device-timing launched \
      --out "$W/results/ncu-f64-$m-up0-$f.json" >"$W/logs/ncu-f64-$m-up0-$f.txt" 2>&1
    log "ncu cuda-f64 $m up0/$f rc=$? $(grep -E 'polyphase_kernel<|Duration|Achieved Occupancy|No Eligible|pipe_fp64' "$W/logs/ncu-f64-$m-up0-$f.txt" | tr -s ' ' | cut -c1-160 | head -6 | tr '\n' ';')"
  done
fi

if has perf; then
  # Our arms against the cuDNN peer on every stage of the three families (resident, queued), and
  # the same peer through PyTorch: both write records of the one schema.
  for m in bigvgan_v2_44khz_128band_512x bigvgan_v2_44khz_128band_256x bigvgan_base_22khz_80band; do
    timeout 240 $B/bin/bench_conv --model $m --stage all --frames 96,384,1536 --staging resident --reps 5 \
      --arms cuda-f32,cuda-f64,cuda-f64-fma,cuda-tf32,cuda-f64-dmma,cudnn-f32,cudnn-tf32,cudnn-f64 --no-counters \
      --out "$W/results/perf-$m.json" >"$W/logs/perf-$m.txt" 2>&1; log "perf $m rc=$?"
  done
  # torch_peer.py under convlease run: it checks the inherited lease before its first call and
  # after its last sample (--convlease), and its record's lease block says what they found.
  timeout 240 $B/bin/convlease run --gpu 0 -- python3 scripts/torch_peer.py --gpu --threads 16 --frames 96 \
    --convlease $B/bin/convlease --out "$W/results/torch-peer.json" >"$W/logs/torch-peer.txt" 2>&1; log "torch peer rc=$?"
  $B/bin/bench_conv --stage up0,up1,up2,up3 --reps 5 --arms cpu-f32 --threads 16 --no-counters \
    --out "$W/results/cpu-f32.json" >"$W/logs/bench-cpu-f32.txt" 2>&1; log "cpu-f32 16 threads rc=$?"
fi

if has cpu; then
  # cpu-f32 (each instruction set this CPU has, cpu-f32@*) against PyTorch's CPU
  # conv_transpose1d at 16 threads, in turns, 3 rounds of each: torch's times on this machine
  # swing from round to round, so one run of each is no comparison.
  for r in 1 2 3; do
    timeout 150 $B/bin/bench_conv --stage up0,up1,up2,up3 --frames 96 --reps 15 --threads 16 \
      --arms 'cpu-f32,cpu-f32@*' --no-counters --out "$W/results/cpu-f32-r$r.json" >"$W/logs/cpu-f32-r$r.txt" 2>&1
    log "cpu-f32 round $r rc=$?"
    timeout 150 $B/bin/convlease run -- python3 scripts/torch_peer.py --threads 16 --frames 96 --reps 20 \
      --convlease $B/bin/convlease --out "$W/results/torch-cpu-r$r.json" >"$W/logs/torch-cpu-r$r.txt" 2>&1
    log "torch cpu round $r rc=$?"
  done
fi

if has compare; then
  t0=$(date +%s)
  timeout "${COMPARE_TIMEOUT:-1200}" bash scripts/compare_h200.sh $B "$W/results/compare" 2>&1 | tee -a "$W/logs/summary.txt" >&2
  log "compare: $(( $(date +%s) - t0 )) s"
fi

if has aa-order; then
  # When cuDNN's A/A twins disagree beyond the tolerance: does the gap follow the order in which
  # the instances are prepared (and their buffers allocated), or the instance? The instrument's
  # cases as compare_h200.sh runs them (cuDNN's twins last), then with cuDNN's twins first.
  for order in last first; do
    arms=cuda-f32,cuda-f32,cuda-f64,cuda-f64,cudnn-f32,cudnn-f32
    [ $order = first ] && arms=cudnn-f32,cudnn-f32,cuda-f32,cuda-f32,cuda-f64,cuda-f64
    timeout 150 $B/bin/bench_conv --stage up0,up1,up2 --frames 96 --staging resident --reps 9 \
      --arms $arms --out "$W/results/instrument-cudnn-$order.json" >"$W/logs/instrument-cudnn-$order.txt" 2>&1
    log "instrument, cuDNN's twins $order: rc=$?"
    PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}" python3 -m convbench_analysis report \
      "$W/results/instrument-cudnn-$order.json" --baseline cuda-f32/resident 2>&1 | sed -n '/A\/A twins/,$p' \
      | tee -a "$W/logs/summary.txt" >&2
  done
fi

if has sweep; then
  # Every compiled block shape of the fast kernel as an arm of its own (cuda-f32@t128-c8-k16-u16
  # ...), gated against cpu-f64 like its arm and timed by the one engine on every vocoder stage;
  # then the tuning table from those records, and what it changes.
  if [ -x $B/bin/fast_gpu_tests ]; then
    timeout 200 $B/bin/fast_gpu_tests --gtest_filter='*EveryConfig*:*ClusterSplits*:*AsyncStaging*' >"$W/logs/fast-configs.txt" 2>&1
    log "fast_gpu_tests EveryConfig rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/logs/fast-configs.txt" | tr '\n' ' ')"
  fi
  # One run per model, length and accumulator: a run keeps every case's buffers resident from its
  # gate to its end, so the device must hold them all (bench_conv refuses a plan that would not
  # fit). SWEEP_MODELS / SWEEP_FRAMES narrow a call when the whole sweep needs several; each
  # call's tuned_configs.inc is the committed table with the rows it swept re-chosen (commit it
  # to carry the next call on; a full sweep's records without --update also re-choose kFallback).
  # SWEEP_ACC narrows the accumulators (f32, f64), SWEEP_F64_ARMS the f64 arms.
  for m in ${SWEEP_MODELS:-bigvgan_v2_44khz_128band_512x bigvgan_v2_44khz_128band_256x bigvgan_base_22khz_80band}; do
    for f in ${SWEEP_FRAMES:-96 384 1536}; do
      for acc in ${SWEEP_ACC:-f32 f64}; do
        arms='cuda-f32@*'
        [ $acc = f64 ] && arms=${SWEEP_F64_ARMS:-'cuda-f64@*,cuda-f64-fma@*'}
        enough 40 "sweep $m $f $acc" || continue
        timeout $(cap "${SWEEP_TIMEOUT:-300}") $B/bin/bench_conv --model $m --stage all --frames $f \
          --staging resident --reps "${SWEEP_REPS:-3}" --min-time 0.02 --no-counters --arms "$arms" \
          --out "$W/results/sweep-$m-$f-$acc.json" >"$W/logs/sweep-$m-$f-$acc.txt" 2>"$W/logs/sweep-$m-$f-$acc.err"
        log "sweep $m $f $acc rc=$? (4 = some block failed its gate)"
      done
    done
  done
  # --update: the rows these records cover re-chosen, the table's others kept; each changed row
  # named with the old block's time over the new one's.
  python3 scripts/fast_tuning.py --update kernels/fast/src/tuned_configs.inc "$W/results"/sweep-*.json \
    >"$W/results/tuned_configs.inc" 2>"$W/logs/fast-tuning.err"
  log "fast_tuning rc=$? $(tr '\n' ';' <"$W/logs/fast-tuning.err")"
  diff kernels/fast/src/tuned_configs.inc "$W/results/tuned_configs.inc" >"$W/logs/tuning-diff.txt"
  log "tuning table: $(grep -c '^>.*Arm::' "$W/logs/tuning-diff.txt") rows differ (logs/tuning-diff.txt)"
fi

if has wgmma; then
  # The wgmma kernels' device gates: the identity GEMM first (a wrong tile layout, descriptor or
  # shift names the cell it read), then the other Wgmma tests, then every tensor-core arm's gates
  # (TcGpu); WGMMA_FILTERS replaces the two after the identity GEMM. When the identity GEMM fails,
  # the steps after this one are skipped: they would time a kernel that computes the wrong thing
  # (its gate would refuse it anyway).
  for f in 'Wgmma.IdentityGemmDecodesEveryCell' ${WGMMA_FILTERS:-'Wgmma.*:-Wgmma.IdentityGemmDecodesEveryCell' 'TcGpu.*'}; do
    enough 40 "tc_gpu_tests $f" || break
    n=$(echo "$f" | cut -d: -f1 | tr -c 'A-Za-z0-9\n' '_')
    timeout $(cap "${WGMMA_TIMEOUT:-240}") $B/bin/tc_gpu_tests --gtest_filter="$f" >"$W/logs/tc-$n.txt" 2>&1
    rc=$?
    log "tc_gpu_tests $f rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/logs/tc-$n.txt" | tr '\n' ' ')"
    grep -E "Failure|\] = |worst|rel-L2|not caught|\[ +(OK|FAILED) +\]" "$W/logs/tc-$n.txt" | head -40 | tee -a "$W/logs/summary.txt" >&2
    if [ $rc != 0 ] && [ "$f" = Wgmma.IdentityGemmDecodesEveryCell ]; then
      log "the identity GEMM failed: the steps after wgmma are skipped"
      tar -C "$W" -czf "$OUT/h200.tgz" logs results; exit 1
    fi
  done
fi

if has wgmma-san; then
  # The wgmma kernels under compute-sanitizer memcheck: the identity GEMM (every variant) and the
  # small sets of the random shapes and planted faults (CONVBENCH_SANITIZER_SMALL).
  CONVBENCH_SANITIZER_SMALL=1 timeout $(cap 150) compute-sanitizer --tool memcheck --error-exitcode 1 \
    $B/bin/tc_gpu_tests --gtest_filter='Wgmma.IdentityGemmDecodesEveryCell:Wgmma.RandomShapesOfBothOps:Wgmma.PlantedFaultsAreCaught' \
    >"$W/logs/san-memcheck-wgmma.txt" 2>&1
  log "memcheck wgmma: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/logs/san-memcheck-wgmma.txt" | tr '\n' ' ')"
fi

if has dmma; then
  # The fp64 tensor-core rate (devices.json's fp64_dmma_flops), then the DMMA kernels' device gates
  # (every tile and split, random shapes, planted faults) and cuda-f64-dmma on every stage of
  # DMMA_MODELS at 96/384/1536 frames beside its floor.
  timeout $(cap 60) $B/bin/dmma_peak >"$W/results/dmma-peak.json" 2>"$W/logs/dmma-peak.err"
  log "dmma_peak rc=$? $(cat "$W/results/dmma-peak.json" "$W/logs/dmma-peak.err")"
  timeout $(cap "${DMMA_TIMEOUT:-240}") $B/bin/tc_gpu_tests --gtest_filter="${DMMA_FILTERS:-Dmma.*}" >"$W/logs/tc-dmma.txt" 2>&1
  log "tc_gpu_tests ${DMMA_FILTERS:-Dmma.*} rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/logs/tc-dmma.txt" | tr '\n' ' ')"
  grep -E "Failure|ulp off|not caught|\[ +(OK|FAILED) +\]" "$W/logs/tc-dmma.txt" | head -40 | tee -a "$W/logs/summary.txt" >&2
  for m in ${DMMA_MODELS:-bigvgan_v2_44khz_128band_512x}; do
    enough 60 "dmma $m" || break
    timeout $(cap "${DMMA_BENCH_TIMEOUT:-150}") $B/bin/bench_conv --model $m --stage all --frames 96,384,1536 --staging resident \
      --reps 3 --no-counters --arms cuda-f64-dmma --out "$W/results/dmma-$m.json" >"$W/logs/dmma-$m.txt" 2>&1
    log "dmma bench $m rc=$?"
  done
fi

if has dmma-san; then
  # The DMMA kernels under compute-sanitizer memcheck and racecheck (the shared-memory pipeline):
  # the small sets of the random shapes and the planted faults.
  for tool in memcheck racecheck; do
    enough 40 "$tool dmma" || break
    CONVBENCH_SANITIZER_SMALL=1 timeout $(cap 150) compute-sanitizer --tool $tool --error-exitcode 1 \
      $B/bin/tc_gpu_tests --gtest_filter='Dmma.RandomShapesOfBothOps:Dmma.PlantedFaultsAreCaught' \
      >"$W/logs/san-$tool-dmma.txt" 2>&1
    log "$tool dmma: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$W/logs/san-$tool-dmma.txt" | tr '\n' ' ')"
  done
fi

if has tiles; then
  # The wgmma kernels' tile sweep: every column tile and split of cuda-tf32 (and cuda-f32x3 with
  # TILE_ARMS) as a hidden arm of its own beside the arm's own choice, on a few stages; the table
  # says, per case, the plan's choice and time against the best variant's.
  timeout $(cap "${TILE_TIMEOUT:-200}") $B/bin/bench_conv --stage "${TILE_STAGES:-up0,up3,amp0.k7.d1}" \
    --frames "${TILE_FRAMES:-96,1536}" --staging resident --reps 3 --min-time 0.02 --no-counters \
    --arms "${TILE_ARMS:-cuda-tf32,cuda-tf32@*}" --out "$W/results/tiles.json" >"$W/logs/tiles.txt" 2>"$W/logs/tiles.err"
  log "tile sweep: rc=$?"
  python3 scripts/tile_table.py "$W/results/tiles.json" 2>&1 | tee -a "$W/logs/summary.txt" >&2
fi

if has ncu-tc; then
  # What limits the wgmma kernels: Nsight Compute of one call's two kernels (the input transpose
  # (rows on M) and the convolution; the first call is the gate's) per case of NCU_TC,
  # "stage/frames/arm".
  for c in ${NCU_TC:-up3/1536/cuda-tf32 up5/1536/cuda-tf32 up1/1536/cuda-tf32 up0/1536/cuda-tf32}; do
    IFS=/ read -r st fr arm <<<"$c"
    enough 40 "ncu $c" || break
    timeout $(cap 90) ncu --clock-control none -k 'regex:wg_rows_kernel|wg_positions_kernel|transpose_input|dm_kernel' --launch-skip 2 --launch-count 2 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
      $B/bin/bench_conv --stage $st --frames $fr --arms "$arm" --staging resident --reps 2 --target-ci 0 --min-time 0.001 \
      --no-counters --no-lease --device-timing launched --out "$W/results/ncu-tc.json" >"$W/logs/ncu-tc-$st-$fr-${arm//@/_}.txt" 2>&1
    log "ncu $c rc=$?"
    grep -E "^  [a-z_:<>, 0-9A-Za-z]*(wg_rows_kernel|wg_positions_kernel|transpose_input|dm_kernel)|Duration|DRAM Throughput|Compute \(SM\) Throughput|L2 Cache Throughput|Achieved Occupancy|Registers Per Thread|Dynamic Shared Memory Per Block|Stall|stall" \
      "$W/logs/ncu-tc-$st-$fr-${arm//@/_}.txt" | tr -s ' ' | cut -c1-150 | head -30 | tee -a "$W/logs/summary.txt" >&2
  done
fi

if has gemm; then
  # The measured ceilings in the same call as our arms: per family, bench_conv times the arms that
  # face them (cuda-tf32, cuda-f32, cuda-f64-dmma) on every stage, then torch_peer.py --gemm
  # --beside that record times cuBLAS TF32, BF16, SIMT f32 and f64 on each stage's polyphase GEMM
  # (the same multiply-adds); perf_table.py forms each ratio within one such pair only.
  # GEMM_STAGES (default all: the upsample stages) may name Conv1d stages too (amp0, pre): their
  # ceiling is the implicit GEMM.
  # GEMM_MODELS, GEMM_FRAMES and GEMM_ARMS narrow or change the runs (the tensor-core targets:
  # GEMM_ARMS=cuda-tf32,cuda-f32x3,cudnn-tf32,cudnn-f32).
  # Both sides time the GPU's work: our arms with --device-timing queued (the stream held while a
  # call is enqueued), cuBLAS as back-to-back calls of at least 2 ms per sample (torch_peer.py
  # --min-time); GEMM_TIMING=launched times ours with the host's launch latency instead.
  for m in ${GEMM_MODELS:-bigvgan_v2_44khz_128band_512x bigvgan_v2_44khz_128band_256x bigvgan_base_22khz_80band}; do
    enough 90 "gemm $m" || break
    timeout $(cap "${GEMM_TIMEOUT:-150}") $B/bin/bench_conv --model $m --stage "${GEMM_STAGES:-all}" --frames "${GEMM_FRAMES:-96,384,1536}" --staging resident \
      --reps 5 --no-counters --device-timing "${GEMM_TIMING:-queued}" \
      --arms "${GEMM_ARMS:-cuda-tf32,cuda-f32,cuda-f64-dmma}" --out "$W/results/gemm-ours-$m.json" \
      >"$W/logs/gemm-ours-$m.txt" 2>&1
    log "gemm: our arms $m rc=$?"
    [ -s "$W/results/gemm-ours-$m.json" ] || continue
    timeout $(cap 120) $B/bin/convlease run --gpu 0 -- python3 scripts/torch_peer.py --gemm --no-cpu \
      --beside "$W/results/gemm-ours-$m.json" --convlease $B/bin/convlease \
      --out "$W/results/gemm-$m.json" >"$W/logs/gemm-$m.txt" 2>&1
    log "gemm: cuBLAS ceilings beside them $m rc=$?"
  done
  python3 scripts/perf_table.py "$W/results"/gemm-ours-*.json $(ls "$W/results"/gemm-bigvgan*.json 2>/dev/null) \
    >"$W/results/gemm-table.md" 2>"$W/logs/gemm-table.err"
  rc=$?
  log "gemm: perf_table rc=$rc $(head -1 "$W/logs/gemm-table.err")"
fi

if has queued; then
  # The queue hold itself (unit tests), then the instrument's cases (A/A twins, 9 rounds) timed
  # both ways in one call: CV and A/A per mode, and what the launch gaps cost each arm.
  $B/bin/bench_unit_tests --gtest_filter='QueueHold.*' >"$W/logs/queue-hold.txt" 2>&1
  log "bench_unit_tests QueueHold rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$W/logs/queue-hold.txt" | tr '\n' ' ')"
  for timing in queued launched; do
    timeout 120 $B/bin/bench_conv --stage up0,up1,up2 --frames 96 --staging resident --reps 9 --no-counters \
      --arms cuda-f32,cuda-f32,cuda-f64,cuda-f64,cudnn-f32,cudnn-f32 --device-timing $timing \
      --out "$W/results/instrument-$timing.json" >"$W/logs/instrument-$timing.txt" 2>&1
    log "instrument --device-timing $timing: rc=$?"
  done
  timeout 200 python3 bench/tests/e2e.py gpu_run "$PWD/$B/bin/bench_conv" "$PWD/results/result.schema.json" \
    >"$W/logs/e2e-gpu-run.txt" 2>&1
  log "e2e gpu_run (launched and queued) rc=$? $(tail -1 "$W/logs/e2e-gpu-run.txt")"
fi

# ---- the second wave's measurements on the H200 (each step is one block of a device call) ----
A="python3 -m convbench_analysis"
export PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}"
report() { $A report --no-history "$@" >"$W/logs/report-$(basename "${1%.json}").txt" 2>&1; echo $?; }

if has queue; then
  # The fleet's normal state, a queue on one GPU: a holder, three contenders started a few seconds
  # later with --lease-wait 300, and one more started with no wait during the holder's run (refused
  # at once). nvidia-smi lists the GPU's compute processes every second meanwhile
  # (logs/queue-smi.txt): a run waiting for its lease, or refused it, must never be listed (no CUDA
  # context before its lease). Expect: rc 0 0 0 0 and 3 (no record), at most one process at a
  # time, the refused run's pid never listed; four records valid, each hold strictly after the
  # previous one, the report accepting all four with no foreign-gpu and no lease-overlap.
  if enough 150 queue; then
    Q="--stage up2,up3 --arms cuda-f32,cudnn-f32 --staging resident --target-ci 0 --no-counters"
    rm -f "$W/results"/queue-*.json
    ( while :; do echo "$(date -u +%T.%N | cut -c1-12) $(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>&1 | tr '\n' ';')"; sleep 1; done ) \
      >"$W/logs/queue-smi.txt" 2>&1 &
    smi=$!
    t0=$(date +%s)
    timeout $(cap 140) $B/bin/bench_conv $Q --reps 40 --min-time 0.15 --out "$W/results/queue-0.json" \
      >"$W/logs/queue-0.txt" 2>&1 &
    pids=($!)
    sleep 4
    for i in 1 2 3; do
      timeout $(cap 140) $B/bin/bench_conv $Q --reps 20 --lease-wait 300 --out "$W/results/queue-$i.json" \
        >"$W/logs/queue-$i.txt" 2>&1 &
      pids+=($!)
      sleep 1
    done
    sleep 2
    timeout 60 $B/bin/bench_conv $Q --reps 20 --out "$W/results/queue-refused.json" >"$W/logs/queue-refused.txt" 2>&1 &
    refused=$!
    wait $refused; rc_refused=$?
    rcs=""
    for p in "${pids[@]}"; do wait "$p"; rcs+=" $?"; done
    kill $smi 2>/dev/null; wait $smi 2>/dev/null
    log "queue: holder + 3 waiters rc$rcs (expect 0 0 0 0); refused at once rc=$rc_refused (expect 3) $(head -c 300 "$W/logs/queue-refused.txt" | grep -m1 'lease refused'); wall $(( $(date +%s) - t0 )) s"
    python3 - "$W" "$refused" "${pids[@]}" <<'PY' 2>&1 | tee -a "$W/logs/summary.txt" >&2
import json, os, re, sys
w, refused, ours = sys.argv[1], sys.argv[2], sys.argv[3:]
most, seen = 0, set()
for line in open(f"{w}/logs/queue-smi.txt"):
    procs = [p.split(",")[0].strip() for p in line.split(" ", 1)[-1].split(";") if p.strip()]
    procs = [p for p in procs if p.isdigit()]
    most, seen = max(most, len(procs)), seen | set(procs)
print(f"queue nvidia-smi: at most {most} compute process(es) at once (expect 1); our runs listed:"
      f" {sorted(seen & set(ours))} of {ours}; the refused run ({refused}) listed:"
      f" {'YES' if refused in seen else 'no'}; others: {sorted(seen - set(ours)) or 'none'}")
print("queue refused run wrote a record:", os.path.exists(f"{w}/results/queue-refused.json"))
held = []
for i in range(4):
    try:
        held.append((i, json.load(open(f"{w}/results/queue-{i}.json"))))
    except Exception as e:
        print(f"queue-{i}: no record ({e})")
held.sort(key=lambda t: t[1]["lease"].get("acquired_utc") or "")  # in the order they held it
prev = None
for i, d in held:
    L = d["lease"]
    ob = L.get("observation") or {}
    order = "" if prev is None else (" after the previous holder" if prev <= (L.get("acquired_utc") or "") else " OVERLAPS the previous holder")
    print(f"queue-{i}: started {d['started_utc']} acquired {L.get('acquired_utc')} released"
          f" {L.get('released_utc')} token {L.get('token')}{order}; verdict {L.get('verdict')},"
          f" foreign GPU max {ob.get('foreign_gpu_processes_max')}; {'; '.join(L.get('reasons') or [])[:300]}")
    prev = L.get("released_utc") or d["ended_utc"]
PY
    qr=$($A report --no-history "$W"/results/queue-[0-3].json >"$W/logs/report-queue.txt" 2>&1; echo $?)
    log "queue report rc=$qr (expect 0); foreign-gpu: $(grep -c 'foreign-gpu' "$W/logs/report-queue.txt"), lease-overlap/two-mutexes: $(grep -cE 'lease-overlap|lease-two-mutexes' "$W/logs/report-queue.txt") (expect 0 0); $(tail -1 "$W/logs/report-queue.txt")"
  fi
fi

if has main10; then
  # Clean runs of the README's main job exactly as written (its twins, counters and lease
  # included), back to back, each judged alone; MAIN_RUNS (10) and MAIN_FIRST (1) number them.
  first=${MAIN_FIRST:-1}
  for i in $(seq "$first" $(( first + ${MAIN_RUNS:-10} - 1 ))); do
    enough 45 "main run $i" || break
    t0=$(date +%s)
    timeout $(cap 70) $B/bin/bench_conv --stage up0 --reps 3 --out "$W/results/main-$i.json" \
      >"$W/logs/main-$i.txt" 2>&1
    rc=$?
    log "main run $i: rc=$rc wall $(( $(date +%s) - t0 )) s report rc=$(report "$W/results/main-$i.json") $(tail -1 "$W/logs/report-main-$i.txt")"
  done
fi

if has aa; then
  # A/A coverage: every case timed twice (--twins all) on a large and a small stage, host,
  # per-call and resident; AA_RUNS (5) runs, judged together by `calibrate`.
  for i in $(seq "${AA_RUNS:-5}"); do
    enough 45 "aa run $i" || break
    timeout $(cap 70) $B/bin/bench_conv --stage up0,up2 --reps 3 --twins all --no-counters \
      --out "$W/results/aa-$i.json" >"$W/logs/aa-$i.txt" 2>&1
    log "aa run $i (--twins all): rc=$? report rc=$(report "$W/results/aa-$i.json") $(tail -1 "$W/logs/report-aa-$i.txt")"
  done
  $A calibrate "$W"/results/aa-*.json "$W"/results/main-*.json >"$W/logs/calibrate.txt" 2>&1
  tail -8 "$W/logs/calibrate.txt" | tee -a "$W/logs/summary.txt" >&2
fi

if has faults; then
  # Four injected faults, one run each; every faulty run lasts long enough (fixed 120-150 rounds) for
  # the fault to start after its first rounds. Expect: foreign-gpu, lease-void, foreign-cpu x2.
  # FAULTS picks some of them (cotenant bypass hogall hog3).
  F="--stage up2,up3 --target-ci 0 --no-counters"
  fault() { [[ " ${FAULTS:-cotenant bypass hogall hog3} " == *" $1 "* ]]; }
  if fault cotenant; then
  ( timeout $(cap 90) $B/bin/bench_conv $F --staging resident --arms cuda-f32,cudnn-f32 --reps 120 \
      --out "$W/results/f-cotenant.json" >"$W/logs/f-cotenant.txt" 2>&1 ) & p=$!
  sleep 4; python3 -c "import torch,time; x=torch.ones(1,device='cuda'); torch.cuda.synchronize(); time.sleep(8)"
  wait $p; log "co-tenant mid-run: rc=$? report rc=$(report "$W/results/f-cotenant.json")"
  fi
  if fault bypass; then
  ( timeout $(cap 90) $B/bin/bench_conv $F --staging resident --arms cuda-f32 --reps 150 \
      --out "$W/results/f-leased.json" >"$W/logs/f-leased.txt" 2>&1 ) & p=$!
  sleep 5; timeout $(cap 60) $B/bin/bench_conv $F --staging resident --arms cuda-f32 --reps 6 --no-lease \
    --out "$W/results/f-bypass.json" >"$W/logs/f-bypass.txt" 2>&1
  wait $p; log "leased run beside a --no-lease one: rc=$? report rc=$(report "$W/results/f-leased.json"); bypass report rc=$(report "$W/results/f-bypass.json")"
  fi
  if fault hogall; then
  for i in $(seq "$(nproc)"); do (timeout 40 bash -c 'while :; do :; done') & done
  timeout $(cap 60) $B/bin/bench_conv $F --arms cpu-f32 --reps 6 --out "$W/results/f-hogall.json" >"$W/logs/f-hogall.txt" 2>&1
  log "busy loop on every CPU: rc=$? report rc=$(report "$W/results/f-hogall.json")"; wait
  fi
  if fault hog3; then
  (timeout 40 taskset -c 3 bash -c 'while :; do :; done') &
  timeout $(cap 60) $B/bin/bench_conv $F --arms cpu-f32 --reps 6 --out "$W/results/f-hog3.json" >"$W/logs/f-hog3.txt" 2>&1
  log "busy loop pinned to cpu 3: rc=$? report rc=$(report "$W/results/f-hog3.json")"; wait
  fi
  grep -hE "^ +(foreign|lease|host)" "$W"/logs/report-f-*.txt | cut -c1-220 | sort | uniq -c | tee -a "$W/logs/summary.txt" >&2
fi

if has trust-cpu; then
  # What pinning does to the host arms: 16 and 8 threads, pinned and not, three runs each in
  # turns, and one thread on up3; then the table (scripts/host_table.py).
  for r in 1 2 3; do for p in pin nopin; do for t in 16 8; do
    enough 40 "cpu $p t$t r$r" || break 3
    x=""; [ $p = nopin ] && x=--no-pin
    timeout $(cap 60) $B/bin/bench_conv --stage up0,up1,up2,up3 --arms cpu-f64,cpu-f32 --threads $t $x --reps 5 \
      --target-ci 0 --no-counters --no-lease --out "$W/results/cpu-$p-t$t-r$r.json" >"$W/logs/cpu-$p-t$t-r$r.txt" 2>&1
  done; done; done
  for p in pin nopin; do
    x=""; [ $p = nopin ] && x=--no-pin
    timeout $(cap 60) $B/bin/bench_conv --stage up3 --arms cpu-f64,cpu-f32 --threads 1 $x --reps 5 --target-ci 0 \
      --no-counters --no-lease --out "$W/results/cpu1-$p.json" >"$W/logs/cpu1-$p.txt" 2>&1
  done
  python3 scripts/host_table.py "$W"/results/cpu-*.json "$W"/results/cpu1-*.json 2>&1 | tee -a "$W/logs/summary.txt" >&2
fi

if has plugin; then
  # The example plugin's CUDA arm and cuda-f32 through the ABI beside the built-in and cuDNN.
  PD=$(dirname "$(find $B -name example_arms.so | head -1)")
  timeout $(cap 120) $B/bin/bench_conv --plugin $PD/example_arms.so --plugin $PD/abi_arms.so \
    --arms cuda-f32,abi-cuda-f32,example-cuda-f32,cudnn-f32 --stage up0,up1,up2,up3 --reps 6 \
    --out "$W/results/plugin.json" >"$W/logs/plugin.txt" 2>&1
  log "plugin run: rc=$? report rc=$(report "$W/results/plugin.json" --pairs abi-cuda-f32:cuda-f32,example-cuda-f32:cudnn-f32)"
  timeout $(cap 150) python3 bench/tests/plugin/plugin_e2e.py gpu $B/bin/bench_conv $PD results/result.schema.json \
    >"$W/logs/plugin-e2e-gpu.txt" 2>&1; log "plugin e2e gpu: rc=$?"
fi

if has algo; then
  for a in 'bwd_data_algo_0' 'bwd_data_algo_1 (tensor-op math)'; do
    n=${a:14:1}
    timeout $(cap 40) $B/bin/bench_conv --stage up3 --arms cudnn-tf32 --staging resident --reps 6 --target-ci 0 \
      --no-counters --cudnn-algo "$a" --out "$W/results/algo-$n.json" >"$W/logs/algo-$n.txt" 2>&1
  done
  $A report --no-history "$W/results/algo-0.json" "$W/results/algo-1.json" >"$W/logs/report-algo.txt" 2>&1
  log "two pinned cuDNN algorithms: report rc=$? $(grep -c config-changed "$W/logs/report-algo.txt") config-changed"
fi

if has amp; then
  # Every AMP Conv1d of the 512x model (54 distinct convolutions), cuda-f32 beside cudnn-f32, at 96 and
  # 1536 frames (AMP_FRAMES): the forward target, one ratio per convolution. AMP_ARMS adds arms (the
  # tensor-core targets on the AMP convs: cuda-tf32,cuda-f32x3,cuda-f32,cudnn-tf32,cudnn-f32).
  for f in ${AMP_FRAMES:-96 1536}; do
    enough 60 "amp/$f" || break
    timeout $(cap "${AMP_TIMEOUT:-240}") $B/bin/bench_conv --stage amp --frames $f --arms "${AMP_ARMS:-cuda-f32,cudnn-f32}" --staging resident \
      --reps 5 --no-counters --out "$W/results/amp-$f.json" >"$W/logs/amp-$f.txt" 2>&1
    log "amp / $f: rc=$? report rc=$(report "$W/results/amp-$f.json")"
    grep -E "cuda-f32/resident / cudnn-f32/resident" "$W/logs/report-amp-$f.txt" | awk '$4 ~ /^[0-9.]+$/ {print $4}' | sort -g |
      awk '{v[NR]=$1} END {if (NR) printf "  cuda-f32/cudnn-f32 over %d accepted ratios: min %s median %s max %s\n", NR, v[1], v[int((NR+1)/2)], v[NR]}' |
      tee -a "$W/logs/summary.txt" >&2
  done
fi

if has forward-san; then
  # The forward tile kernel (cp.async staging, cluster reduction) under memcheck and racecheck:
  # racecheck first on the width probe (one block, split 1: the staging pipeline), then on the
  # smallest cluster (one tile, two ranks), then on the split test (it did not finish in 150 s
  # with six shapes, nor in 70 s with one).
  CONVBENCH_SANITIZER_SMALL=1 timeout $(cap 60) compute-sanitizer --tool memcheck --error-exitcode 1 \
    $B/bin/kernels_cuda_tests --gtest_filter='CudaForwardTile.*' >"$W/logs/san-memcheck-forward.txt" 2>&1
  log "memcheck forward tile: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/logs/san-memcheck-forward.txt" | tr '\n' ' ')"
  for f in WidthProbe SmallestClusterForTheSanitizers EverySplitWithinToleranceAndDeterministic; do
    CONVBENCH_SANITIZER_SMALL=1 timeout $(cap 70) compute-sanitizer --tool racecheck --error-exitcode 1 \
      $B/bin/kernels_cuda_tests --gtest_filter="CudaForwardTile.$f" >"$W/logs/san-racecheck-forward-$f.txt" 2>&1
    log "racecheck forward tile $f: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' "$W/logs/san-racecheck-forward-$f.txt" | tr '\n' ' ')"
  done
fi

if has causal-race; then
  timeout $(cap 120) compute-sanitizer --tool racecheck --error-exitcode 1 $B/bin/kernels_causal_gpu_tests \
    --gtest_filter='*StateShapes*:*Planted*' >"$W/logs/san-racecheck-causal.txt" 2>&1
  log "racecheck causal state shapes + planted in-place: rc=$? $(grep -E 'SUMMARY|PASSED|FAILED|cells differ' "$W/logs/san-racecheck-causal.txt" | tr '\n' ' ')"
fi

if has f32x3; then
  # cuda-f32x3 beside cuda-f32 and cudnn-f32 on the four large upsample stages at 96 and 1536
  # frames: each gate's relative L2 against cpu-f64 (f32x3 should be no worse than cuda-f32's)
  # and the times.
  timeout $(cap 150) $B/bin/bench_conv --stage up0,up1,up2,up3 --frames 96,1536 --staging resident \
    --arms cuda-f32,cuda-f32x3,cuda-tf32,cudnn-f32 --reps 5 --no-counters --out "$W/results/f32x3.json" \
    >"$W/logs/f32x3.txt" 2>&1
  log "f32x3: rc=$? report rc=$(report "$W/results/f32x3.json")"
  grep -E "gate .*(cuda-f32|cuda-f32x3|cuda-tf32)/resident" "$W/logs/f32x3.txt" | sed 's/.*gate //' | tee -a "$W/logs/summary.txt" >&2
  grep -E "^  (cuda-f32x3|cuda-f32|cudnn-f32)/resident /" "$W/logs/report-f32x3.txt" | tee -a "$W/logs/summary.txt" >&2
fi

if has fwd-fma; then
  # cuda-f64-fma on the forward Conv1d stages (the simple kernel with one __fma_rn per tap): its
  # gate against cpu-f64 must be bitwise, as cuda-f64's.
  timeout $(cap 120) $B/bin/bench_conv --stage pre,amp0.k7.d3,post --arms cuda-f64,cuda-f64-fma --staging resident \
    --reps 3 --target-ci 0 --no-counters --out "$W/results/fwd-fma.json" >"$W/logs/fwd-fma.txt" 2>&1
  log "forward cuda-f64-fma: rc=$? $(grep -c 'pass (bitwise' "$W/logs/fwd-fma.txt") bitwise passes, $(grep -c FAIL "$W/logs/fwd-fma.txt") failures"
fi

if has ops; then
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
fi

if has causal; then
  # The causal family (64 shapes: channels 1024-8192, lengths 1-8192, batch 1 and 8, with and
  # without an initial state) per pair of arms, each gated against cpu-f64's reference (not timed:
  # at length 8192 its samples take 160 ms each) and against each other, in groups whose buffers fit the host
  # (bench_conv refuses a plan over half of RAM; the whole family with three arms needs 67 GiB):
  # every length up to 1024, then length 8192 with 1024-2048 channels, 4096, and 8192.
  fam() { local out=() c l b st; for c in $1; do for l in $2; do for b in 1 8; do for st in "" .state; do
    out+=("causal.c$c.l$l.b$b$st"); done; done; done; done; (IFS=,; echo "${out[*]}"); }
  groups=("$(fam "1024 2048 4096 8192" "1 64 1024")" "$(fam "1024 2048" 8192)" "$(fam 4096 8192)" "$(fam 8192 8192)")
  # CAUSAL_PAIRS (f32, bf16) and CAUSAL_GROUPS (0-3) narrow a call.
  for n in ${CAUSAL_PAIRS:-f32 bf16}; do
    pair=cuda-causal-register,cuda-causal-tiled
    [ "$n" = bf16 ] && pair=cuda-causal-register-bf16,cuda-causal-tiled-bf16
    for g in ${CAUSAL_GROUPS:-0 1 2 3}; do
      enough 60 "causal $n group $g" || break 2
      timeout $(cap 200) $B/bin/bench_conv --stage "${groups[$g]}" --arms $pair \
        --staging resident --reps 3 --target-ci 0 --no-counters --out "$W/results/causal-$n-$g.json" >"$W/logs/causal-$n-$g.txt" 2>&1
      log "causal family ($n pair, group $g): rc=$? $(grep -c 'pass (bitwise' "$W/logs/causal-$n-$g.txt") bitwise passes, $(grep -c FAIL "$W/logs/causal-$n-$g.txt") failures"
    done
  done
fi

if has tensor-counters; then
  # The tensor pipes under the counters (after `build`): which metrics the profiler accepts and
  # their passes, what they count on kernels with a known MMA count, the tensor peaks, the
  # profiles' tests (the GPU teeth fail rather than skip here), CUPTI beside ncu on one DMMA and
  # one wgmma call, the main job with its counters column, and the counters' cost on it.
  TP=$B/bin/tensor_probe
  timeout $(cap 60) $TP metrics >"$W/results/tensor-metrics.jsonl" 2>"$W/logs/tensor-metrics.err"
  log "tensor_probe metrics rc=$? $(grep -hE '"candidates"|"profile"' "$W/results/tensor-metrics.jsonl" | tr '\n' ' ')"
  grep -h '"accepted":false' "$W/results/tensor-metrics.jsonl" | cut -c1-200 | tee -a "$W/logs/summary.txt" >&2
  timeout $(cap 90) $TP capture >"$W/results/tensor-capture.jsonl" 2>"$W/logs/tensor-capture.err"
  log "tensor_probe capture rc=$? (per metric and kernel: value, per PTX MMA, per multiply-add)"
  grep -hE '"exact_for"|"instructions_for"' "$W/results/tensor-capture.jsonl" | tee -a "$W/logs/summary.txt" >&2
  tail -3 "$W/logs/tensor-capture.err" >&2
  if enough 60 "tensor main job"; then
    t0=$(date +%s.%N)
    timeout $(cap 120) $B/bin/bench_conv --stage up0 --reps 3 --out "$W/results/tc-up0.json" \
      >"$W/logs/tc-up0.txt" 2>"$W/logs/tc-up0.err"
    r=$?; w1=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
    log "bench_conv --stage up0 --reps 3 (counters): rc=$r wall ${w1} s; $(grep -c 'bench_conv: counters' "$W/logs/tc-up0.err") captures"
    PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}" python3 -m convbench_analysis report --no-history \
      "$W/results/tc-up0.json" >"$W/logs/tc-report-up0.txt" 2>&1
    log "report (counters column, one line per arm): rc=$?"
    grep -E "^  (cuda|cudnn|cpu)-" "$W/logs/tc-report-up0.txt" | cut -c1-230 | tee -a "$W/logs/summary.txt" >&2
    $B/bin/counter_check "$W/results/tc-up0.json" >"$W/logs/tc-counter-check.txt" 2>&1
    log "counter_check rc=$? $(tr '\n' ';' <"$W/logs/tc-counter-check.txt" | cut -c1-400)"
  fi
  timeout $(cap 30) $B/bin/dmma_peak >"$W/results/dmma-peak.json" 2>&1
  log "dmma_peak rc=$? $(cat "$W/results/dmma-peak.json")"
  timeout $(cap 60) $B/bin/tensor_peak >"$W/results/tensor-peak.json" 2>&1
  log "tensor_peak rc=$? $(cat "$W/results/tensor-peak.json")"
  timeout $(cap 150) ctest --test-dir $B --output-on-failure --timeout 140 -R '^profiles\.' \
    >"$W/logs/ctest-profiles.txt" 2>&1
  log "ctest -R ^profiles\\. rc=$? $(grep -E 'tests passed|tests failed' "$W/logs/ctest-profiles.txt" | tail -1)"
  grep -E "\*\*\*Failed|\*\*\*Skipped|Not Run|^ *\[  (FAILED|SKIPPED) \]|/96/cuda-(f64-dmma|tf32|f32x3)|^(dmma|hmma|wgmma)_" \
    "$W/logs/ctest-profiles.txt" | cut -c1-260 | head -40 | tee -a "$W/logs/summary.txt" >&2
  NM=sm__inst_executed_pipe_tensor_op_dmma.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__ops_path_tensor_src_fp64.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum,sm__pipe_tensor_op_dmma_cycles_active.sum,sm__pipe_tensor_op_hmma_cycles_active.sum
  for k in dmma-conv wgmma-conv; do
    enough 40 "ncu $k" || break
    timeout $(cap 60) ncu --clock-control none --csv --page raw --print-units base --metrics $NM \
      $TP launch $k >"$W/results/ncu-$k.csv" 2>"$W/logs/ncu-$k.err"
    r1=$?
    timeout $(cap 30) $TP capture-one $k --metrics $NM >"$W/results/cupti-$k.json" 2>"$W/logs/cupti-$k.err"
    r2=$?
    python3 profiles/tools/ncu_compare.py "$W/results/ncu-$k.csv" "$W/results/cupti-$k.json" \
      >"$W/logs/ncu-compare-$k.txt" 2>&1
    log "ncu beside CUPTI, $k: ncu rc=$r1, CUPTI rc=$r2, compare rc=$? (0: every count equal)"
    tee -a "$W/logs/summary.txt" <"$W/logs/ncu-compare-$k.txt" >&2
  done
  if enough 60 "tensor overhead"; then
    t0=$(date +%s.%N)
    timeout $(cap 120) $B/bin/bench_conv --stage up0 --reps 3 --no-counters --out "$W/results/tc-up0-nc.json" \
      >"$W/logs/tc-up0-nc.txt" 2>"$W/logs/tc-up0-nc.err"
    r=$?; w2=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
    log "bench_conv --stage up0 --reps 3 --no-counters: rc=$r wall ${w2} s; the counters cost $(awk -v a="${w1:-0}" -v b="$w2" 'BEGIN { printf "%.1f", a - b }') s"
  fi
fi

tar -C "$W" -czf "$OUT/h200.tgz" logs results
cp "$W/logs/summary.txt" "$OUT/"
