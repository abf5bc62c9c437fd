# shellcheck shell=bash
# h200.sh step `tune` (sourced after ../common.sh: log, cap, enough, B, W, OUT, tree_analysis).
# The tensor-core plans against every forced variant where a target was missed, each beside the
# ceiling it is judged against, one record per group (TUNE_GROUPS narrows: names below); the
# tile table of each to the summary, the records to $OUT. What it finds goes into the plans' cost
# models (kernels/tc/src/cost_model.hpp).
# fwd: cuda-f32's forward tile kernel in every tile shape and split (cuda-f32@fwd-*) on the AMP
# convs where it trailed cudnn-f32 (TUNE_FWD_FRAMES, default 384).
declare -A tune_arms=([f32x3]="cuda-f32x3,cudnn-f32" [tf32]="cuda-tf32,cublas-tf32"
  [dmma]="cuda-f64-dmma,cublas-dgemm" [fwd]="cuda-f32,cudnn-f32")
declare -A tune_cases=([f32x3]="up0,up1 96" [tf32]="up1,up2 384,1536" [dmma]="up1,up2,up3 96"
  [fwd]="amp1.k7.d1,amp2.k3.d1,amp2.k7.d1,amp2.k11.d1,amp3.k7.d1,amp3.k11.d1 ${TUNE_FWD_FRAMES:-384}")
for g in ${TUNE_GROUPS:-f32x3 tf32 dmma}; do
  enough 60 "tune $g" || break
  read -r stages frames <<<"${tune_cases[$g]}"
  fam=${tune_arms[$g]%%,*}
  variants="$fam@*"
  [ "$g" = fwd ] && variants="$fam@fwd-*"
  timeout "$(cap 150)" "$B/bin/bench_conv" --stage "$stages" --frames "$frames" --staging resident \
    --reps 3 --min-time 0.02 --no-counters --twins none --arms "${tune_arms[$g]},$variants" \
    --out "$W/results/tune-$g.json" >"$W/logs/tune-$g.txt" 2>&1
  log "tune $g: rc=$?"
  python3 -m convbench_analysis tile-table "$W/results/tune-$g.json" 2>&1 | tee -a "$W/logs/summary.txt" >&2
  gzip -c "$W/results/tune-$g.json" >"$OUT/tune-$g.json.gz" 2>/dev/null
done
