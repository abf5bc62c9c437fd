"""The one place on the Python side that knows the result record's field names beyond the
schema: arm labels, run summaries, counters. Everything else asks here."""

from __future__ import annotations

from .load import Run

# CUPTI metric names (facts.md): FLOP = add + mul + 2 x fma, peak = 2 x fma/cycle x SM clock
_OP = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
_PEAK = "sm__sass_thread_inst_executed_op_{}_pred_on.sum.peak_sustained"
_CLOCK = "sm__cycles_elapsed.avg.per_second"


def label(case: dict) -> str:
    """An arm as the report names it: arm and staging, e.g. cuda-f64/resident, cpu-f64/host."""
    return f"{case['arm']}/{case['staging']}"


def summary(run: Run) -> dict:
    d = run.data
    lease = d["lease"]
    uuid = (lease.get("resource") or {}).get("gpu_uuid")
    gpus = d["gpus"]
    gpu = next((g for g in gpus if uuid and g.get("uuid") == uuid), gpus[0] if gpus else None)
    verdict = lease.get("verdict") if lease.get("status") == "collected" else lease.get("status")
    return {
        "path": run.path,
        "run_id": d["run_id"],
        "host": d["host"].get("name"),
        "gpu": (gpu or {}).get("name") or "no GPU",
        "gpu_uuid": (gpu or {}).get("uuid"),
        "model": d["plan"].get("model"),
        "device_timing": d["plan"].get("device_timing", "launched"),
        "lease": verdict or "unknown",
        "lease_backend": lease.get("backend"),
        "lease_token": lease.get("token"),
        "git_sha": d["tool"].get("git_sha"),
        "started_utc": d["started_utc"],
    }


def achieved(case: dict) -> dict | None:
    """Achieved fp64/fp32 TFLOP/s per call and % of peak, from collected counters and the
    event-timed best; None when not collected. Unavailable counters say why."""
    ctr = case.get("counters") or {}
    status = ctr.get("status")
    if status == "unavailable":
        why = ctr.get("message") or ctr.get("reason") or "no reason recorded"
        return {"status": "unavailable", "why": f"{ctr.get('call') or 'counters'}: {why}"}
    if status != "collected" or not case.get("stats"):
        return None
    m, best = ctr.get("metrics") or {}, case["stats"]["best"]
    clock = m.get(_CLOCK)
    out = {"status": "collected"}
    for prec, p in (("fp64", "d"), ("fp32", "f")):
        ops = [m.get(_OP.format(p + op)) for op in ("add", "mul", "fma")]
        if any(v is None for v in ops) or best <= 0:
            continue
        flop = ops[0] + ops[1] + 2.0 * ops[2]
        if flop <= 0:
            continue
        tf = flop / best / 1e12
        peak_inst = m.get(_PEAK.format(p + "fma"))
        peak = 2.0 * peak_inst * clock / 1e12 if peak_inst and clock else None
        out[prec] = {
            "tflops": tf,
            "peak_tflops": peak,
            "pct_peak": 100.0 * tf / peak if peak else None,
        }
    return out
