# shellcheck shell=bash
# h200.sh step `causal` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
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
