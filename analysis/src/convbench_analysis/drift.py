"""Across runs: device times taken in different timing modes are never compared, and two runs
of the same request on the same host and binary whose times disagree beyond both runs' noise
are refused, with the difference between their records named first (kernel choice, build,
driver, clocks, delivered CPU speed) and "drift" (instrument instability) only when nothing
recorded differs. The other runs are those named together, or earlier runs from the history."""

from __future__ import annotations

import math

import numpy as np

from . import record
from .checks import case_findings, lease_findings, seconds, spread_of
from .findings import Assessment, Finding
from .load import Run, parse_utc


def device_timing(run: Run) -> str:
    """How the run timed its resident device arms; results older than the field: launched."""
    return run.plan.device_timing


def request_key(run: Run) -> tuple:
    """Runs with one key asked for the same thing of the same machine and source: the case id
    pins stage/frames/arm/staging; the rest of the plan that can move a case's time is the model,
    the thread count and the device timing (other stages, reps, seed should not)."""
    return (
        run.tool.get("git_sha"),
        record.host_id(run),
        run.plan.model,
        run.plan.threads,
        device_timing(run),
    )


def timing_mode_findings(a: Assessment, compared: bool) -> None:
    """Launched times include the host's launch gaps, queued ones do not: never set one against
    the other. `compared`: the runs' cases are set against each other (compare A B); else only
    runs that would be drift references of each other are (the same request but the timing)."""
    for x in range(len(a.runs)):
        for y in range(x + 1, len(a.runs)):
            rx, ry = a.runs[x], a.runs[y]
            tx, ty = device_timing(rx), device_timing(ry)
            if tx == ty or not (compared or request_key(rx)[:4] == request_key(ry)[:4]):
                continue
            ids_y = {c.id for c in ry.cases if c.device}
            for c in rx.cases:
                if not c.device or c.id not in ids_y:
                    continue
                for me, i, mine, other, theirs in ((rx, x, tx, ry, ty), (ry, y, ty, rx, tx)):
                    a.add(
                        Finding(
                            "timing-mode",
                            f"timed {mine} here, {theirs} in {other.path}",
                            me.path,
                            c.id,
                        ),
                        i,
                    )


def _median(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(np.median(xs)) if xs else None


def _slowest_speed(case: dict) -> float | None:
    return _median(
        (record.slowest_worker(s) or {}).get("adds_per_s") for s in record.Case.of(case).samples
    )


def cause(rx: Run, cx: dict, ry: Run, cy: dict, th) -> tuple[str, str]:
    """(code, what differs) between two records of one case, first difference first."""
    kx, ky = record.kernel_choice(cx), record.kernel_choice(cy)
    for key, what in (
        ("algorithm", "cuDNN algorithm" if record.arm_facts(cx).math == "cudnn" else "algorithm"),
        ("config", "tuned config"),
        ("name", "kernel"),
        ("workspace_bytes", "workspace bytes"),
    ):
        if kx[key] != ky[key] and (kx[key] is not None or ky[key] is not None):
            return "config-changed", f"{what} {kx[key]} vs {ky[key]}"
    tx, ty = rx.tool, ry.tool
    for key in ("binary_sha", "build_type", "cxx_flags", "cuda_flags", "compiler"):
        if tx.get(key) != ty.get(key):
            return "build-changed", f"{key} {tx.get(key)} vs {ty.get(key)}"
    if cx.device:
        dx, dy = (record.gpu_of(rx) or {}).get("driver"), (record.gpu_of(ry) or {}).get("driver")
        if dx != dy:
            return "driver-changed", f"driver {dx} vs {dy}"
        mx = _median(record.measured_clock(s) for s in cx.samples)
        my = _median(record.measured_clock(s) for s in cy.samples)
        if mx and my and abs(mx - my) / max(mx, my) > th.clock_changed_max:
            return "clock-changed", f"median SM clock {mx:.0f} vs {my:.0f} MHz"
        fx, fy = record.capped_fraction(cx)[0], record.capped_fraction(cy)[0]
        if abs(fx - fy) > th.throttle_fraction_diff_max:
            return "clock-changed", f"capped {fx:.0%} vs {fy:.0%} of the time"
    else:
        sx, sy = _slowest_speed(cx), _slowest_speed(cy)
        if sx and sy and abs(sx - sy) / max(sx, sy) > th.host_speed_changed_max:
            return (
                "host-speed-changed",
                f"the arm's slowest CPU delivered {sx / 1e9:.2g} vs {sy / 1e9:.2g} G/s "
                "(median over rounds)",
            )
        ux, uy = record.pinned_cpus(rx), record.pinned_cpus(ry)
        if ux != uy:
            return "host-speed-changed", f"the arm ran on cpus {ux} vs {uy}"
    return "drift", "nothing recorded differs"


def drift_floor_of(case: dict, th) -> float:
    """The least disagreement between two clean runs' best times that is drift, by kind of case:
    what clean runs of that kind move between runs minutes apart on the fleet's machines."""
    return {"host": th.drift_floor_host, "per-call": th.drift_floor_per_call}.get(
        record.Case.of(case).staging, th.drift_floor
    )


def _disagree(cx: dict, cy: dict, th) -> tuple[float, float, float, float] | None:
    sx, sy = seconds(cx), seconds(cy)
    if not len(sx) or not len(sy):
        return None
    bx, by = float(sx.min()), float(sy.min())
    if min(bx, by) <= 0:
        return None
    noise = math.hypot(spread_of(sx)[0], spread_of(sy)[0])
    allowed = max(th.drift_k * noise, drift_floor_of(cx, th))
    ratio = max(bx, by) / min(bx, by)
    return (bx, by, ratio, allowed) if ratio > 1.0 + allowed else None


def _finding(me: Run, c: dict, other: Run, cy: dict, d, th, earlier: bool) -> Finding:
    mine, theirs, ratio, allowed = d
    code, what = cause(me, c, other, cy, th)
    where = (
        f"the earlier run {other.path} (run {other.run_id[:8]}, started {other.started_utc})"
        if earlier
        else other.path
    )
    detail = (
        f"best {mine:.4g} s here vs {theirs:.4g} s in {where}: x{ratio:.2f} > allowed "
        f"x{1 + allowed:.2f}; {what}"
    )
    return Finding(code, detail, me.path, c.id)


def accepted_cases(run: Run, th) -> set[str]:
    """The cases of a reference run that its own checks accept: only those are references."""
    if any(f.refuses for f in lease_findings(run, th)):
        return set()
    return {
        c.id
        for c in run.cases
        if not any(f.refuses for f in case_findings(run, c, th)) and len(seconds(c))
    }


def drift_findings(a: Assessment, history: list[Run]) -> None:
    th = a.thresholds
    for x in range(len(a.runs)):
        for y in range(x + 1, len(a.runs)):
            rx, ry = a.runs[x], a.runs[y]
            if request_key(rx) != request_key(ry) or rx.run_id == ry.run_id:
                continue
            cy = {c.id: c for c in ry.cases}
            for c in rx.cases:
                d = cy.get(c.id)
                got = d is not None and _disagree(c, d, th)
                if got:
                    a.add(_finding(rx, c, ry, d, got, th, False), x)
                    mine, theirs, ratio, allowed = got
                    a.add(_finding(ry, d, rx, c, (theirs, mine, ratio, allowed), th, False), y)
    named = {r.run_id for r in a.runs}
    refs = [h for h in history if h.run_id not in named]
    for i, run in enumerate(a.runs):
        start = parse_utc(run.started_utc)
        earlier = sorted(
            (
                h
                for h in refs
                if request_key(h) == request_key(run) and parse_utc(h.ended_utc) <= start
            ),
            key=lambda h: h.started_utc,
            reverse=True,
        )
        depth = int(th.history_depth)
        ok = {id(h): accepted_cases(h, th) for h in earlier}
        for c in run.cases:
            refs_c = [h for h in earlier if c.id in ok[id(h)]][:depth]
            for h in refs_c:
                d = next(x for x in h.cases if x.id == c.id)
                got = _disagree(c, d, th)
                if got:
                    a.add(_finding(run, c, h, d, got, th, True), i)
                    break  # the most recent earlier run that disagrees names it
