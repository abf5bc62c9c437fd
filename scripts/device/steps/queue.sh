# shellcheck shell=bash
# h200.sh step `queue` (sourced after ../common.sh: log, cap, enough, B, W, OUT).
# The fleet's normal state, a queue on one GPU: a holder, three contenders started a few seconds
# later with --lease-wait 300, and one more started with no wait during the holder's run (refused
# at once). nvidia-smi lists the GPU's compute processes every second meanwhile
# (logs/queue-smi.txt): a run waiting for its lease, or refused it, must never be listed (no CUDA
# context before its lease). Expect: rc 0 0 0 0 and 3 (no record), at most one process at a
# time, the refused run's pid never listed; four records valid, each hold strictly after the
# previous one, the report accepting all four with no foreign-gpu and no lease-overlap.
if enough 150 queue; then
  Q="--stage up2,up3 --arms cuda-f32,cudnn-f32 --staging resident --target-ci 0 --no-counters"
  rm -f "$W/results"/queue-*.json
  ( while :; do echo "$(date -u +%T.%N | cut -c1-12) $(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>&1 | tr '\n' ';')"; sleep 1; done ) \
    >"$W/logs/queue-smi.txt" 2>&1 &
  smi=$!
  t0=$(date +%s)
  timeout $(cap 140) $B/bin/bench_conv $Q --reps 40 --min-time 0.15 --out "$W/results/queue-0.json" \
    >"$W/logs/queue-0.txt" 2>&1 &
  pids=($!)
  sleep 4
  for i in 1 2 3; do
    timeout $(cap 140) $B/bin/bench_conv $Q --reps 20 --lease-wait 300 --out "$W/results/queue-$i.json" \
      >"$W/logs/queue-$i.txt" 2>&1 &
    pids+=($!)
    sleep 1
  done
  sleep 2
  timeout 60 $B/bin/bench_conv $Q --reps 20 --out "$W/results/queue-refused.json" >"$W/logs/queue-refused.txt" 2>&1 &
  refused=$!
  wait $refused; rc_refused=$?
  rcs=""
  for p in "${pids[@]}"; do wait "$p"; rcs+=" $?"; done
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  log "queue: holder + 3 waiters rc$rcs (expect 0 0 0 0); refused at once rc=$rc_refused (expect 3) $(head -c 300 "$W/logs/queue-refused.txt" | grep -m1 'lease refused'); wall $(( $(date +%s) - t0 )) s"
  python3 - "$W" "$refused" "${pids[@]}" <<'PY' 2>&1 | tee -a "$W/logs/summary.txt" >&2
import json, os, re, sys
w, refused, ours = sys.argv[1], sys.argv[2], sys.argv[3:]
most, seen = 0, set()
for line in open(f"{w}/logs/queue-smi.txt"):
    procs = [p.split(",")[0].strip() for p in line.split(" ", 1)[-1].split(";") if p.strip()]
    procs = [p for p in procs if p.isdigit()]
    most, seen = max(most, len(procs)), seen | set(procs)
print(f"queue nvidia-smi: at most {most} compute process(es) at once (expect 1); our runs listed:"
      f" {sorted(seen & set(ours))} of {ours}; the refused run ({refused}) listed:"
      f" {'YES' if refused in seen else 'no'}; others: {sorted(seen - set(ours)) or 'none'}")
print("queue refused run wrote a record:", os.path.exists(f"{w}/results/queue-refused.json"))
held = []
for i in range(4):
    try:
        held.append((i, json.load(open(f"{w}/results/queue-{i}.json"))))
    except Exception as e:
        print(f"queue-{i}: no record ({e})")
held.sort(key=lambda t: t[1]["lease"].get("acquired_utc") or "")  # in the order they held it
prev = None
for i, d in held:
    L = d["lease"]
    ob = L.get("observation") or {}
    order = "" if prev is None else (" after the previous holder" if prev <= (L.get("acquired_utc") or "") else " OVERLAPS the previous holder")
    print(f"queue-{i}: started {d['started_utc']} acquired {L.get('acquired_utc')} released"
          f" {L.get('released_utc')} token {L.get('token')}{order}; verdict {L.get('verdict')},"
          f" foreign GPU max {ob.get('foreign_gpu_processes_max')}; {'; '.join(L.get('reasons') or [])[:300]}")
    prev = L.get("released_utc") or d["ended_utc"]
PY
  qr=$($A report --no-history "$W"/results/queue-[0-3].json >"$W/logs/report-queue.txt" 2>&1; echo $?)
  log "queue report rc=$qr (expect 0); foreign-gpu: $(grep -c 'foreign-gpu' "$W/logs/report-queue.txt"), lease-overlap/two-mutexes: $(grep -cE 'lease-overlap|lease-two-mutexes' "$W/logs/report-queue.txt") (expect 0 0); $(tail -1 "$W/logs/report-queue.txt")"
fi
