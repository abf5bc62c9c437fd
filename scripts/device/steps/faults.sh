# shellcheck shell=bash
# h200.sh step `faults` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# Four injected faults, one run each; every faulty run lasts long enough (fixed 120-150 rounds) for
# the fault to start after its first rounds. Expect: foreign-gpu, lease-void, foreign-cpu x2.
# FAULTS picks some of them (cotenant bypass hogall hog3).
F="--stage up2,up3 --target-ci 0 --no-counters"
fault() { [[ " ${FAULTS:-cotenant bypass hogall hog3} " == *" $1 "* ]]; }
if fault cotenant; then
( timeout $(cap 90) $B/bin/bench_conv $F --staging resident --arms cuda-f32,cudnn-f32 --reps 120 \
    --out "$W/results/f-cotenant.json" >"$W/logs/f-cotenant.txt" 2>&1 ) & p=$!
sleep 4; python3 -c "import torch,time; x=torch.ones(1,device='cuda'); torch.cuda.synchronize(); time.sleep(8)"
wait $p; log "co-tenant mid-run: rc=$? report rc=$(report "$W/results/f-cotenant.json")"
fi
if fault bypass; then
( timeout $(cap 90) $B/bin/bench_conv $F --staging resident --arms cuda-f32 --reps 150 \
    --out "$W/results/f-leased.json" >"$W/logs/f-leased.txt" 2>&1 ) & p=$!
sleep 5; timeout $(cap 60) $B/bin/bench_conv $F --staging resident --arms cuda-f32 --reps 6 --no-lease \
  --out "$W/results/f-bypass.json" >"$W/logs/f-bypass.txt" 2>&1
wait $p; log "leased run beside a --no-lease one: rc=$? report rc=$(report "$W/results/f-leased.json"); bypass report rc=$(report "$W/results/f-bypass.json")"
fi
if fault hogall; then
for i in $(seq "$(nproc)"); do (timeout 40 bash -c 'while :; do :; done') & done
timeout $(cap 60) $B/bin/bench_conv $F --arms cpu-f32 --reps 6 --out "$W/results/f-hogall.json" >"$W/logs/f-hogall.txt" 2>&1
log "busy loop on every CPU: rc=$? report rc=$(report "$W/results/f-hogall.json")"; wait
fi
if fault hog3; then
(timeout 40 taskset -c 3 bash -c 'while :; do :; done') &
timeout $(cap 60) $B/bin/bench_conv $F --arms cpu-f32 --reps 6 --out "$W/results/f-hog3.json" >"$W/logs/f-hog3.txt" 2>&1
log "busy loop pinned to cpu 3: rc=$? report rc=$(report "$W/results/f-hog3.json")"; wait
fi
grep -hE "^ +(foreign|lease|host)" "$W"/logs/report-f-*.txt | cut -c1-220 | sort | uniq -c | tee -a "$W/logs/summary.txt" >&2
