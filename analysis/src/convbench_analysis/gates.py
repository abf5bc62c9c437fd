"""The gates: a typed list (code, one-line message, remedy), and the checks that trip them.

A ratio is reported only when no gate trips on either of its cases or on their runs. Run-level
gates (lease-*) and cross-run gates (lease-overlap, drift) need every supplied run at once, so
`assess` takes them all. Thresholds come from thresholds.Thresholds only."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .load import Run, parse_utc
from .thresholds import Thresholds  # noqa: F401  (re-exported for callers)


@dataclass(frozen=True)
class Gate:
    code: str
    message: str  # what it means, one line
    remedy: str  # what would fix it, one line
    thresholds: tuple[str, ...] = ()


GATES: dict[str, Gate] = {
    g.code: g
    for g in (
        Gate(
            "lease-none",
            "the run was not under a lease (not collected, no token, or --no-lease)",
            "run bench_conv under the lease (no --no-lease; `convlease run -- bench_conv ...`)",
        ),
        Gate(
            "lease-void",
            "the lease verdict is void or its start/end verification failed",
            "re-run when the GPU is free; the lease reasons name who else held it",
        ),
        Gate(
            "lease-expired",
            "the lease lapsed: a renewal came later than the TTL",
            "raise the lease TTL or renew more often, then re-run",
            ("renew_gap_fraction",),
        ),
        Gate(
            "lease-overlap",
            "another accepted run held the same GPU with a different token at the same time",
            "two lease authorities are in play (e.g. a local flock vs the fleet "
            "lease): use the site's one authority and re-run both",
        ),
        Gate(
            "foreign-cpu",
            "another process used the CPUs during a sample of a host arm",
            "re-run on a quiet host (stop other jobs, hold the host lease)",
            ("foreign_cpu_share_max",),
        ),
        Gate(
            "foreign-gpu",
            "another process held a context on the GPU during a sample",
            "re-run when no other process is on the GPU (nvidia-smi lists them)",
        ),
        Gate(
            "clock",
            "the SM clock was below the threshold of its max, or the GPU was throttled",
            "check power and thermals (nvidia-smi -q -d PERFORMANCE), let the GPU settle, re-run",
            ("sm_clock_min_fraction",),
        ),
        Gate(
            "spread",
            "the rounds disagree: max/min or CV above the threshold",
            "re-run with more iterations per sample or more rounds, on a quiet machine",
            ("device_cv_max", "device_spread_max", "host_cv_max", "host_spread_max"),
        ),
        Gate(
            "timing-mode",
            "the same device case was timed launched in one run and queued in another: "
            "the times measure different things",
            "compare runs made with the same bench_conv --device-timing",
        ),
        Gate(
            "drift",
            "another run of the same binary, config and host disagrees beyond both runs' noise",
            "the instrument is unstable between runs: find the cause (load, governor, "
            "lease) before trusting either run",
            ("drift_k", "drift_floor"),
        ),
        Gate(
            "gate-failed",
            "the correctness gate failed: the arm computes the wrong result",
            "fix the arm; a wrong arm is never timed",
        ),
        Gate(
            "too-few-rounds",
            "too few timed rounds to judge the spread",
            "re-run with --reps at least the threshold",
            ("min_rounds",),
        ),
    )
}


@dataclass(frozen=True)
class Finding:
    code: str
    detail: str  # the specific numbers, one line
    path: str  # the run's file
    case_id: str | None = None  # None: the whole run

    @property
    def gate(self) -> Gate:
        return GATES[self.code]

    def line(self) -> str:
        return f"{self.code}: {self.detail} (fix: {self.gate.remedy})"

    def as_dict(self) -> dict:
        return {
            "code": self.code,
            "message": self.gate.message,
            "detail": self.detail,
            "remedy": self.gate.remedy,
            "file": self.path,
            "case": self.case_id,
        }


@dataclass
class Assessment:
    runs: list[Run]
    thresholds: Thresholds
    run_findings: dict[int, list[Finding]] = field(default_factory=dict)
    case_findings: dict[tuple[int, str], list[Finding]] = field(default_factory=dict)

    def for_case(self, i: int, case_id: str) -> list[Finding]:
        """Every reason a number from this case cannot be trusted: its run's and its own."""
        return self.run_findings.get(i, []) + self.case_findings.get((i, case_id), [])

    def codes(self, i: int, case_id: str | None = None) -> list[str]:
        fs = self.for_case(i, case_id) if case_id else self.run_findings.get(i, [])
        return sorted({f.code for f in fs})

    def all_findings(self) -> list[Finding]:
        out = [f for fs in self.run_findings.values() for f in fs]
        return out + [f for fs in self.case_findings.values() for f in fs]

    def _add(self, f: Finding, i: int) -> None:
        if f.case_id is None:
            self.run_findings.setdefault(i, []).append(f)
        else:
            self.case_findings.setdefault((i, f.case_id), []).append(f)


def seconds(case: dict) -> np.ndarray:
    return np.array([s["seconds"] for s in case.get("samples") or []], dtype=float)


def spread_of(x: np.ndarray) -> tuple[float, float]:
    """(cv, max/min) of round samples; cv with n-1 like pyperf and Google Benchmark."""
    if len(x) < 2:
        return 0.0, 1.0
    mean = float(x.mean())
    cv = float(x.std(ddof=1) / mean) if mean > 0 else math.inf
    mn = float(x.min())
    return cv, (float(x.max()) / mn if mn > 0 else math.inf)


# ---- run-level ---------------------------------------------------------------------------


def _lease_gates(run: Run, th: Thresholds) -> list[Finding]:
    lease, p, out = run.data["lease"], run.path, []
    status, token = lease.get("status"), lease.get("token")
    if status != "collected":
        why = lease.get("reason") or lease.get("message")
        out.append(
            Finding("lease-none", f"lease status {status!r}" + (f" ({why})" if why else ""), p)
        )
        return out
    if token in (None, ""):
        out.append(Finding("lease-none", "the lease block has no token", p))
    if lease.get("verdict") == "outside-lease":
        out.append(Finding("lease-none", "verdict outside-lease (run with --no-lease)", p))
    bad_checks = [
        k
        for k in ("start_check", "end_check")
        if isinstance(lease.get(k), dict) and lease[k].get("ok") is False
    ]
    if lease.get("verdict") == "void" or bad_checks:
        why = "; ".join(lease.get("reasons") or []) or ", ".join(
            f"{k} failed: {lease[k].get('detail')}" for k in bad_checks
        )
        out.append(
            Finding(
                "lease-void", f"verdict {lease.get('verdict')}" + (f": {why}" if why else ""), p
            )
        )
    gap, ttl = lease.get("max_renew_gap_s"), lease.get("ttl_s")
    if gap is not None and ttl and gap >= th.renew_gap_fraction * ttl:
        out.append(
            Finding(
                "lease-expired",
                f"max renewal gap {gap:.3g} s >= {th.renew_gap_fraction:g} x TTL {ttl:.3g} s",
                p,
            )
        )
    return out


def _resource(run: Run) -> str:
    res = run.data["lease"].get("resource") or {}
    return res.get("gpu_uuid") or f"{res.get('host') or run.data['host'].get('name')}:cpu"


def _overlap_gates(a: Assessment) -> None:
    accepted = [
        i
        for i, r in enumerate(a.runs)
        if r.data["lease"].get("status") == "collected"
        and not {"lease-none", "lease-void", "lease-expired"} & set(a.codes(i))
    ]
    for x in accepted:
        for y in accepted:
            if y <= x:
                continue
            rx, ry = a.runs[x], a.runs[y]
            if _resource(rx) != _resource(ry):
                continue
            tx, ty = rx.data["lease"].get("token"), ry.data["lease"].get("token")
            if tx == ty and rx.data["run_id"] == ry.data["run_id"]:
                continue  # the same run supplied twice
            x0, x1 = parse_utc(rx.data["started_utc"]), parse_utc(rx.data["ended_utc"])
            y0, y1 = parse_utc(ry.data["started_utc"]), parse_utc(ry.data["ended_utc"])
            if tx != ty and x0 < y1 and y0 < x1:
                for me, other, tok in ((rx, ry, ty), (ry, rx, tx)):
                    a._add(
                        Finding(
                            "lease-overlap",
                            f"{other.path} held {_resource(me)} with "
                            f"token {tok} during this run (this run's token "
                            f"{me.data['lease'].get('token')})",
                            me.path,
                        ),
                        a.runs.index(me),
                    )


# ---- case-level --------------------------------------------------------------------------

BENIGN_THROTTLE = {"", "none", "idle", "gpuidle"}


def _norm_reason(r: str) -> str:
    return "".join(ch for ch in r.lower() if ch.isalnum()).removeprefix("clocksevent")


def _sm_clock_max(run: Run) -> float | None:
    uuid = (run.data["lease"].get("resource") or {}).get("gpu_uuid")
    gpus = run.data["gpus"]
    g = next((g for g in gpus if uuid and g.get("uuid") == uuid), gpus[0] if gpus else None)
    return g.get("sm_clock_max_mhz") if g else None


def _case_gates(run: Run, case: dict, th: Thresholds) -> list[Finding]:
    p, cid, out = run.path, case["id"], []
    if case["gate"]["result"] == "fail":
        g = case["gate"]
        out.append(
            Finding(
                "gate-failed",
                f"{g['kind']} gate: {g.get('mismatches')} mismatching "
                f"cells, max abs err {g.get('max_abs_err')}, rel L2 "
                f"{g.get('rel_l2_err')} (tolerance {g.get('tolerance')})",
                p,
                cid,
            )
        )
        return out  # never timed: nothing else to judge
    samples = case["samples"]
    x = seconds(case)
    if len(x) < th.min_rounds:
        out.append(Finding("too-few-rounds", f"{len(x)} timed rounds < {th.min_rounds:g}", p, cid))
    cv, spread = spread_of(x)
    cv_max, sp_max = (
        (th.device_cv_max, th.device_spread_max)
        if case["device"]
        else (th.host_cv_max, th.host_spread_max)
    )
    if cv > cv_max or spread > sp_max:
        out.append(
            Finding(
                "spread",
                f"max/min {spread:.3f} (limit {sp_max:g}), CV {cv:.2%} "
                f"(limit {cv_max:.0%}) over {len(x)} rounds",
                p,
                cid,
            )
        )
    if not case["device"]:
        worst = max(samples, key=lambda s: s.get("foreign_cpu_share") or 0.0, default=None)
        share = (worst or {}).get("foreign_cpu_share") or 0.0
        if share > th.foreign_cpu_share_max:
            out.append(
                Finding(
                    "foreign-cpu",
                    f"foreign CPU share {share:.3f} > "
                    f"{th.foreign_cpu_share_max:g} in round {worst['round']}",
                    p,
                    cid,
                )
            )
        return out
    # device arm
    observed = (run.data["lease"].get("observation") or {}).get("foreign_gpu_samples") or []
    foreign = [
        (s["round"], (s.get(k) or {}).get("foreign_processes") or 0)
        for s in samples
        for k in ("gpu_before", "gpu_after")
    ]
    foreign = [(r, n) for r, n in foreign if n > 0]
    if foreign:
        r, n = max(foreign, key=lambda t: t[1])
        out.append(
            Finding("foreign-gpu", f"{n} foreign process(es) on the GPU in round {r}", p, cid)
        )
    elif cid in observed:
        out.append(
            Finding(
                "foreign-gpu",
                "the lease observation lists this case among samples with a foreign GPU process",
                p,
                cid,
            )
        )
    clock_max = _sm_clock_max(run)
    low, throttled = [], []
    for s in samples:
        # the clock *during* the sample: measured (clock64/globaltimer), else NVML right after;
        # gpu_before is read between samples and legitimately shows idle clocks
        mhz = s.get("measured_sm_clock_mhz")
        if mhz is None:
            mhz = (s.get("gpu_after") or {}).get("sm_clock_mhz")
        if clock_max and mhz is not None and mhz < th.sm_clock_min_fraction * clock_max:
            low.append((s["round"], mhz))
        for k in ("gpu_before", "gpu_after"):
            rs = [
                r
                for r in (s.get(k) or {}).get("throttle_reasons") or []
                if _norm_reason(r) not in BENIGN_THROTTLE
            ]
            if rs:
                throttled.append((s["round"], rs))
    if low:
        r, mhz = min(low, key=lambda t: t[1])
        out.append(
            Finding(
                "clock",
                f"SM clock {mhz:g} MHz < {th.sm_clock_min_fraction:g} x max "
                f"{clock_max:g} MHz in round {r}",
                p,
                cid,
            )
        )
    if throttled:
        r, rs = throttled[0]
        out.append(Finding("clock", f"throttle reasons {', '.join(rs)} in round {r}", p, cid))
    return out


def _drift_key(run: Run) -> tuple:
    d = run.data
    host = d["host"].get("machine_id") or d["host"].get("name")
    # the case id pins stage/frames/arm/staging; the rest of the plan that can move one case's
    # time is the model and the thread count (other stages, reps, seed should not)
    return (
        d["tool"].get("git_sha"),
        d["tool"].get("build_type"),
        host,
        d["plan"].get("model"),
        d["plan"].get("threads"),
        device_timing(run),
    )


def device_timing(run: Run) -> str:
    """How the run timed its resident device arms; results older than the field: launched."""
    return run.data["plan"].get("device_timing", "launched")


def _timing_mode_gates(a: Assessment) -> None:
    """Launched times include the host's launch gaps, queued ones do not: never set one against
    the other."""
    for x in range(len(a.runs)):
        for y in range(x + 1, len(a.runs)):
            rx, ry = a.runs[x], a.runs[y]
            tx, ty = device_timing(rx), device_timing(ry)
            if tx == ty:
                continue
            ids_y = {c["id"] for c in ry.cases if c["device"]}
            for c in rx.cases:
                if not c["device"] or c["id"] not in ids_y:
                    continue
                for me, i, mine, other, theirs in ((rx, x, tx, ry, ty), (ry, y, ty, rx, tx)):
                    a._add(
                        Finding(
                            "timing-mode",
                            f"timed {mine} here, {theirs} in {other.path}",
                            me.path,
                            c["id"],
                        ),
                        i,
                    )


def _drift_gates(a: Assessment) -> None:
    th = a.thresholds
    for x in range(len(a.runs)):
        for y in range(x + 1, len(a.runs)):
            rx, ry = a.runs[x], a.runs[y]
            if _drift_key(rx) != _drift_key(ry) or rx.data["run_id"] == ry.data["run_id"]:
                continue
            cy = {c["id"]: c for c in ry.cases}
            for c in rx.cases:
                d = cy.get(c["id"])
                sx, sy = seconds(c), (seconds(d) if d else np.array([]))
                if not len(sx) or not len(sy):
                    continue
                bx, by = float(sx.min()), float(sy.min())
                if min(bx, by) <= 0:
                    continue
                noise = math.hypot(spread_of(sx)[0], spread_of(sy)[0])
                allowed = max(th.drift_k * noise, th.drift_floor)
                ratio = max(bx, by) / min(bx, by)
                if ratio > 1.0 + allowed:
                    for me, i, mine, other, theirs in ((rx, x, bx, ry, by), (ry, y, by, rx, bx)):
                        a._add(
                            Finding(
                                "drift",
                                f"best {mine:.4g} s here vs {theirs:.4g} s in "
                                f"{other.path}: x{ratio:.2f} > allowed x{1 + allowed:.2f}",
                                me.path,
                                c["id"],
                            ),
                            i,
                        )


def assess(runs: list[Run], th: Thresholds | None = None) -> Assessment:
    a = Assessment(runs, th or Thresholds())
    for i, run in enumerate(runs):
        for f in _lease_gates(run, a.thresholds):
            a._add(f, i)
        for c in run.cases:
            for f in _case_gates(run, c, a.thresholds):
                a._add(f, i)
    _overlap_gates(a)
    _timing_mode_gates(a)
    _drift_gates(a)
    return a
