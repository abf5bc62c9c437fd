# shellcheck shell=bash
# h200.sh step `ncu-tc` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
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
