# shellcheck shell=bash
# h200.sh step `ncu-f32` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
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
