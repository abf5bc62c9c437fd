# shellcheck shell=bash
# h200.sh step `lease` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
python3 -c "import torch,time; x=torch.ones(1,device='cuda'); torch.cuda.synchronize(); time.sleep(120)" &
tp=$!
for i in $(seq 60); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . && break; sleep 1; done
$B/bin/bench_conv --stage up1 --reps 3 --arms cuda-f32 --no-counters --out "$W/results/foreign-gpu.json" \
  >"$W/logs/bench-foreign.txt" 2>&1
log "bench under a foreign CUDA context: rc=$? (expect 3)"
$B/bin/convlease run --gpu 0 -- $B/bin/bench_conv --stage up1 --reps 3 --arms cuda-f32 --no-counters \
  --out "$W/results/foreign-gpu-convlease.json" >"$W/logs/bench-foreign-convlease.txt" 2>&1
log "same under convlease run: rc=$? (expect 3)"
kill $tp 2>/dev/null; wait $tp 2>/dev/null
python3 - "$W/results" <<'PY' 2>&1 | tee -a "$W/logs/summary.txt" >&2
import json, sys
for n in ("foreign-gpu", "foreign-gpu-convlease"):
    try:
        L = json.load(open(f"{sys.argv[1]}/{n}.json"))["lease"]
        print(n, L["verdict"], "|", "; ".join(L["reasons"])[:400])
    except Exception as e:
        print(n, "no result:", e)
PY
