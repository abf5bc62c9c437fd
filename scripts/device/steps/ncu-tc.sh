# shellcheck shell=bash
# h200.sh step `ncu-tc` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# What limits a kernel: Nsight Compute of one call's kernels matching NCU_TC_KERNELS (default the
# tensor-core kernels: the input transpose (rows on M) and the convolution; the first calls are
# the gate's) per case of NCU_TC, "stage/frames/arm". Each case's full report goes to
# $OUT/ncu-tc.tgz as soon as it is written.
kernels=${NCU_TC_KERNELS:-wg_rows_kernel|wg_positions_kernel|transpose_input|dm_kernel}
mkdir -p "$W/ncu-tc"
for c in ${NCU_TC:-up3/1536/cuda-tf32 up5/1536/cuda-tf32 up1/1536/cuda-tf32 up0/1536/cuda-tf32}; do
  IFS=/ read -r st fr arm <<<"$c"
  enough 40 "ncu $c" || break
  f="$W/ncu-tc/$st-$fr-${arm//@/_}.txt"
  timeout "$(cap 90)" ncu --clock-control none -k "regex:$kernels" --launch-skip 2 --launch-count 2 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats --section InstructionStats --section Occupancy \
    --section LaunchStats \
    "$B/bin/bench_conv" --stage "$st" --frames "$fr" --arms "$arm" --staging resident --reps 2 \
    --target-ci 0 --min-time 0.001 --no-counters --no-lease --device-timing launched \
    --out "$W/results/ncu-tc.json" >"$f" 2>&1
  log "ncu $c rc=$?"
  grep -E "^  [a-z_:<>, 0-9A-Za-z]*($kernels)|Duration|DRAM Throughput|Compute \(SM\) Throughput|L2 Cache Throughput|Achieved Occupancy|Registers Per Thread|Dynamic Shared Memory Per Block|Stall|stall" \
    "$f" | tr -s ' ' | cut -c1-150 | head -30 | tee -a "$W/logs/summary.txt" >&2
  tar -C "$W" -czf "$OUT/ncu-tc.tgz" ncu-tc
done
