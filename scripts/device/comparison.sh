#!/usr/bin/env bash
# The whole performance comparison on the GPU machine, in one run: the three model
# families x every upsample stage (+ the chain) x 96, 384 and 1536 frames, resident staging,
# 5 interleaved rounds, our CUDA arms against the cuDNN peer and cuBLAS on every stage's
# polyphase GEMM (the ceiling arms cublas-tf32, cublas-bf16, cublas-sgemm and cublas-dgemm, timed
# in the same rounds); then the instrument's own check (9 rounds with A/A twins); then the analysis
# report of every result and perf-table.md, our arms against the peer, the floors and the
# ceilings of the same run (convbench-analyze perf-table, per record).
# Usage: scripts/device/comparison.sh BUILD_DIR OUT_DIR (the compare step of scripts/h200.sh)
#   MODELS="..." (default: the three families) and ARMS="..." (default below, with the
#   tensor-core arms cuda-tf32 and cuda-f64-dmma, the ones the TF32 and f64 ceilings face) narrow
#   a run; GEMM=0 leaves out the ceilings; DEVICE_TIMING=queued times the resident
#   device arms behind a held stream (bench_conv --device-timing; the default, queued;
#   launched times each call as the host launches it). The whole comparison takes a few minutes
#   on the H200.
set -uo pipefail
B=${1:?build dir}; O=${2:?output dir}
mkdir -p "$O"
export PYTHONPATH="$PWD/analysis/src${PYTHONPATH:+:$PYTHONPATH}"
arms=${ARMS:-cuda-f32,cuda-tf32,cuda-f64,cuda-f64-fma,cuda-f64-dmma,cudnn-f32,cudnn-tf32,cudnn-f64}
[ "${GEMM:-1}" != 0 ] && arms="$arms,cublas-tf32,cublas-bf16,cublas-sgemm,cublas-dgemm"
timing=${DEVICE_TIMING:-queued}
models=${MODELS:-bigvgan_v2_44khz_128band_512x bigvgan_v2_44khz_128band_256x bigvgan_base_22khz_80band}
# The instrument: CV across 9 rounds, and each device arm next to its A/A twin.
"$B/bin/bench_conv" --stage up0,up1,up2 --frames 96 --staging resident --reps 9 --device-timing "$timing" \
  --arms cuda-f32,cuda-f32,cuda-f64,cuda-f64,cudnn-f32,cudnn-f32 --out "$O/instrument.json" \
  >"$O/instrument.txt" 2>"$O/instrument.err"
echo "instrument (9 rounds, A/A): rc=$?"
for model in $models; do
  t0=$(date +%s)
  # Counters (2 untimed passes per case) for the default model; the others are timed only.
  counters=""; [ "$model" = bigvgan_v2_44khz_128band_512x ] || counters=--no-counters
  "$B/bin/bench_conv" --model "$model" --stage all $counters --frames 96,384,1536 --staging resident \
    --device-timing "$timing" --reps 5 --arms "$arms" --out "$O/compare-$model.json" >"$O/compare-$model.txt" 2>"$O/compare-$model.err"
  echo "compare $model: rc=$? $(( $(date +%s) - t0 )) s"
done
for f in "$O"/compare-*.json "$O/instrument.json"; do
  python3 -m convbench_analysis report "$f" --baseline cudnn-f32/resident >"${f%.json}.report.txt" 2>&1
  rc=$? # before any command substitution, which resets $?
  echo "report $(basename "$f"): rc=$rc (3 = some ratio refused)"
done
python3 -m convbench_analysis report "$O/instrument.json" --baseline cuda-f32/resident --json \
  >"$O/instrument.report.json" 2>/dev/null
# Our arms against the peer, the floors and the ceilings of each run, a section per record.
python3 -m convbench_analysis perf-table --doc "$O"/compare-*.json \
  >"$O/perf-table.md" 2>"$O/perf-table.err"
rc=$?
echo "perf table: rc=$rc $(head -1 "$O/perf-table.err")"
python3 -m convbench_analysis plot "$O"/compare-*.json --out "$O/plots" >/dev/null 2>&1
echo "plots: $(ls "$O/plots" 2>/dev/null | wc -l) files"
