# shellcheck shell=bash
# h200.sh step `plugin` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The example plugin's CUDA arm and cuda-f32 through the ABI beside the built-in and cuDNN.
PD=$(dirname "$(find $B -name example_arms.so | head -1)")
timeout $(cap 120) $B/bin/bench_conv --plugin $PD/example_arms.so --plugin $PD/abi_arms.so \
  --arms cuda-f32,abi-cuda-f32,example-cuda-f32,cudnn-f32 --stage up0,up1,up2,up3 --reps 6 \
  --out "$W/results/plugin.json" >"$W/logs/plugin.txt" 2>&1
log "plugin run: rc=$? report rc=$(report "$W/results/plugin.json" --pairs abi-cuda-f32:cuda-f32,example-cuda-f32:cudnn-f32)"
timeout $(cap 150) python3 bench/tests/plugin/plugin_e2e.py gpu $B/bin/bench_conv $PD results/result.schema.json \
  >"$W/logs/plugin-e2e-gpu.txt" 2>&1; log "plugin e2e gpu: rc=$?"
