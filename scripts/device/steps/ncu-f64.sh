# shellcheck shell=bash
# h200.sh step `ncu-f64` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
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
