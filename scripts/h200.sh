#!/usr/bin/env bash
# The one script for the GPU machine (H200): build from source for sm_90, run every test (the GPU
# ones included), the sanitizers, the benchmarks and the performance comparison, and leave logs
# and result records under $OUT (one archive, h200.tgz, and the summary). Every timing is a
# bench_conv run (the one measurement engine).
# Usage: scripts/h200.sh [STEP...]
#   steps: build tests gpu-tests tests-bench sanitize sanitize-splits bench counters lease ncu perf
#          compare sweep queued ncu-f32 ncu-f64 main gemm cpu aa-order
#   (main: the README's main job alone, `bench_conv --stage up0 --reps 3`; bench adds the chain
#   sweep; ncu-f32: ncu of one cuda-f32 and one cudnn-f32 launch on 512x up0 at 96 and 1536
#   frames; ncu-f64: ncu of one cuda-f64 launch on its tuned block, 512x up0 at 96 and 384
#   frames and 256x up0/96; default: all but main, ncu-f32, ncu-f64, gpu-tests, the GPU test
#   binaries alone (tests runs them after ctest), tests-bench, the bench and lease subset of
#   tests, sweep, the fast kernels' block-shape sweep (records -> kernels/fast/tools/fast_tuning.py), queued, --device-timing queued against launched on the instrument's cases, and gemm,
#   the cuBLAS ceiling arms beside ours on every stage's polyphase GEMM, in one run per family;
#   wgmma, wgmma-san, tiles, ncu-tc: the wgmma kernels' device tests, memcheck of them (racecheck
#   and synccheck of the window widths), their tile sweep, ncu of their kernels; dmma, dmma-san:
#   the fp64 tensor-core rate (tensor_peak), the DMMA kernels' device tests and cuda-f64-dmma on
#   every stage, memcheck and racecheck of them;
#   main10, aa, faults, trust-cpu, plugin, algo, amp, forward-san, causal-race, ops, causal, f32x3: the ten clean
#   main-job runs, A/A runs with every case twinned (calibrate's coverage), the four injected faults, pinning at 16/8/1 threads, the plugin arms beside
#   cuDNN, two pinned cuDNN algorithms, cuda-f32 beside cudnn-f32 on every AMP Conv1d (AMP_FRAMES),
#   the forward tile kernel under the sanitizers, racecheck of the causal state shapes (and
#   racecheck and memcheck of every causal tile), the forward Conv1d stages and the torch dump
#   check (OPS_FRAMES), the causal family, cuda-f32x3's accuracy and time, fwd-fma: cuda-f64-fma's
#   bitwise gate on the forward stages; tensor-counters: the tensor-pipe counters
#   (tensor_probe's metrics and units, tensor_peak, the profiles' tests, ncu beside CUPTI on one
#   DMMA and one wgmma call, the main job's counters column and the counters' cost on its wall);
#   frontier: every arm of the 512x upsample stages (with the cuBLAS ceilings) and of the 54 AMP
#   convs at 96, 384 and 1536 frames, for the speed-vs-accuracy frontier; limits: the causal pair
#   beside cuda-copy and cuda-launch (its largest shapes and decode steps); tune: the tensor-core
#   plans against every forced variant where a target was missed (records for wg_cost_fit);
#   persist: the positions-on-M kernels' persistent blocks against one tile per block (AMP
#   blocks 4 and 5, PERSIST_STAGES, PERSIST_FRAMES);
#   verify: the ceilings' gates, the causal pair end to end, the plans' host tests; misses: every
#   case the call's records (or MISSES_FROM's) missed a target on, again with counters;
#   cpu, cpu-f32 (and each of its instruction sets), 3 runs; aa-order, the instrument's cases with
#   cuDNN's A/A twins listed last, then first; queue: a holder and three --lease-wait contenders
#   on the GPU plus one refused at once, nvidia-smi sampled, the four records judged)
# Each step is one file, scripts/device/steps/STEP.sh, sourced in the order below (not the order
# asked for) after scripts/device/common.sh; a name that is no step is ignored.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck disable=SC2034 # read by has() in common.sh
steps=${*:-build tests sanitize sanitize-splits bench counters lease ncu perf compare}
D=scripts/device
# shellcheck source=device/common.sh
source "$D/common.sh"

# The step files in the order they run. A file runs when its name is asked for, or a name `also`
# gives it: main, the main job, runs first of all with bench; sanitize runs for sanitize-splits
# too (asked for together, the two run side by side). The second wave reads records with the
# analysis of this tree (tree_analysis in common.sh).
declare -A also=([main]=bench [sanitize]=sanitize-splits)
first_wave=(build main tests gpu-tests tests-bench sanitize bench counters lease ncu ncu-f32 ncu-f64
  perf cpu compare aa-order sweep wgmma wgmma-san dmma dmma-san tiles ncu-tc gemm queued)
second_wave=(queue main10 aa faults trust-cpu plugin algo amp forward-san causal-race f32x3 fwd-fma
  ops causal tensor-counters verify limits tune persist frontier misses)

run_steps() {
  local step
  for step in "$@"; do
    if has "$step" || { [ -n "${also[$step]:-}" ] && has "${also[$step]}"; }; then
      # shellcheck source=/dev/null
      source "$D/steps/$step.sh"
    fi
  done
}
run_steps "${first_wave[@]}"
tree_analysis
run_steps "${second_wave[@]}"

tar -C "$W" -czf "$OUT/h200.tgz" logs results
cp "$W/logs/summary.txt" "$OUT/"
