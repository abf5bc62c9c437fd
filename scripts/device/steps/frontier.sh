# shellcheck shell=bash
# h200.sh step `frontier` (sourced after ../common.sh: log, cap, enough, B, W, OUT, report).
# Speed beside accuracy: every arm of the 512x upsample stages at 96, 384 and 1536 frames with the
# cuBLAS ceilings, then the 54 AMP convs at the same lengths (FRONTIER_FRAMES), each record copied
# to $OUT (gzipped) as soon as it is written, for `convbench-analyze frontier` and `explain`.
# FRONTIER_UP_ARMS, FRONTIER_UP_FLAGS (e.g. --no-counters) and FRONTIER_SKIP_UP narrow the first.
up_arms=cuda-f32,cuda-f32x3,cuda-tf32,cuda-f64,cuda-f64-dmma,cudnn-f32,cudnn-tf32,cudnn-f64
up_arms=${FRONTIER_UP_ARMS:-$up_arms,cublas-sgemm,cublas-tf32,cublas-dgemm}
amp_arms=cuda-f32,cuda-f32x3,cuda-tf32,cudnn-f32,cudnn-tf32
frames=${FRONTIER_FRAMES:-96,384,1536}
frontier_run() { # name, seconds, bench_conv flags...
  local name=$1 secs=$2
  shift 2
  enough 60 "frontier $name" || return
  local t0
  t0=$(date +%s)
  timeout "$(cap "$secs")" "$B/bin/bench_conv" "$@" --out "$W/results/$name.json" \
    >"$W/logs/$name.txt" 2>"$W/logs/$name.err"
  log "frontier $name: rc=$? wall $(($(date +%s) - t0)) s report rc=$(report "$W/results/$name.json")"
  gzip -c "$W/results/$name.json" >"$OUT/$name.json.gz" 2>/dev/null
}
# shellcheck disable=SC2086 # FRONTIER_UP_FLAGS: flags, split into words
[ -n "${FRONTIER_SKIP_UP:-}" ] || frontier_run up-sweep 200 --stage up0,up1,up2,up3 --frames "$frames" --staging resident \
  --arms "$up_arms" --reps 6 --max-time 90 ${FRONTIER_UP_FLAGS:-}
# The AMP convs' gates take about a minute per length (162 f64 references on the host): one record
# per length, FRONTIER_AMP_FRAMES of them, short samples, each capped at FRONTIER_AMP_SECS (280 s).
for f in ${FRONTIER_AMP_FRAMES:-${frames//,/ }}; do
  frontier_run "amp-sweep-$f" "${FRONTIER_AMP_SECS:-280}" --stage amp --frames "$f" --staging resident --arms "$amp_arms" \
    --reps 6 --min-time 0.01 --max-time 120 --no-counters
done
