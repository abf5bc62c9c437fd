"""What the host and the GPU were doing in each round of a case, for its timeline: the rounds a
hypervisor's steal, a slow CPU, a power or thermal cap, a low clock, a foreign CPU process or a
foreign GPU process touched. Each is found by the check that judges it (checks.py), with the
run's thresholds, so the page marks exactly the rounds the verdict read; a kind of state the
record has no probe for is left out (not drawn as "nothing seen")."""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks, record
from ..load import Run
from ..thresholds import Thresholds


@dataclass(frozen=True)
class Lane:
    """One kind of state over a case's rounds: the marked rounds and what was seen in each."""

    name: str
    marks: dict[int, str]  # round -> what was seen, one short phrase


def _steal(run: Run, case, th: Thresholds) -> Lane | None:
    if not any((record.contention(s) or {}).get("steal_share") is not None for s in case.samples):
        return None
    stolen = checks._stolen_rounds(run, case, th)
    return Lane(
        "steal", {case.samples[j].round: f"hypervisor steal {share:.0%}" for j, share in stolen}
    )


def _slow_cpu(case, th: Thresholds) -> Lane | None:
    if not any(record.host_speed(s) for s in case.samples):
        return None
    marks = {}
    for j in checks._slow_cpu_rounds(case, th):
        w = record.slowest_worker(case.samples[j]) or {}
        marks[case.samples[j].round] = f"cpu {w.get('cpu')} at {w.get('relative', 1.0):.2f}x"
    return Lane("slow CPU", marks)


def _foreign_cpu(run: Run, case, th: Thresholds) -> Lane | None:
    """A foreign share of the machine over its threshold and its tick resolution, or (a pinned
    arm) a worker waiting for its CPU over run_delay_share_max of the sample: someone else ran
    on it (the two ways checks.py finds foreign-cpu)."""
    keys = ("foreign_cpu_window", "foreign_cpu_share")
    if not any(any(k in s for k in keys) for s in case.samples):
        return None
    marks = {}
    pinned = record.pinned_cpus(run)
    who_of_case = record.top_foreign_of(case.samples)
    for s in case.samples:
        said = []
        share, res = record.foreign_share(s)
        if share > th.foreign_cpu_share_max and share > res:
            said.append(f"foreign CPU share {share:.0%}")
        w = record.most_delayed_thread(s) if pinned else None
        if w and w["share"] > th.run_delay_share_max:
            said.append(f"worker {w['worker']} waited {w['share']:.0%} for cpu {w['cpu']}")
        if said:
            who = record.top_foreign(s) or who_of_case
            marks[s.round] = ", ".join(said) + (f"; top {who}" if who else "")
    return Lane("foreign CPU", marks)


def _gpu_recorded(case) -> bool:
    return any(s.get("gpu_before") or s.get("gpu_after") for s in case.samples)


def _power_cap(case, th: Thresholds) -> Lane | None:
    if not _gpu_recorded(case) and not any("violation_us" in s for s in case.samples):
        return None
    capped, _, _ = checks._cap_effect(case, th)
    marks = {}
    for j in capped:
        s = case.samples[j]
        what = ", ".join(record.throttle_reasons(s)) or "capped"
        us = record.capped_us(s)
        if us and s.window_s > 0:
            what += f", {min(1.0, us / (s.window_s * 1e6)):.0%} of the sample's time"
        marks[s.round] = what
    return Lane("power cap", marks)


def _clock(run: Run, case, th: Thresholds) -> Lane | None:
    clock_max = (record.gpu_of(run) or {}).get("sm_clock_max_mhz")
    clocks = {s.round: record.measured_clock(s) for s in case.samples}
    if not clock_max or all(v is None for v in clocks.values()):
        return None
    low = th.sm_clock_min_fraction * clock_max
    return Lane(
        "low clock",
        {r: f"SM {mhz:g} MHz" for r, mhz in clocks.items() if mhz is not None and mhz < low},
    )


def _foreign_gpu(case) -> Lane | None:
    if not _gpu_recorded(case):
        return None
    marks = {}
    for s in case.samples:
        n = max(s.foreign_gpu_processes())
        if n > 0:
            marks[s.round] = f"{n} foreign process(es) on the GPU"
    return Lane("foreign GPU", marks)


def lanes(run: Run, case, th: Thresholds) -> list[Lane]:
    """Every kind of state the record has a probe for on this case, in a fixed order."""
    found = (
        _steal(run, case, th),
        _slow_cpu(case, th),
        _foreign_cpu(run, case, th),
        _power_cap(case, th),
        _clock(run, case, th),
        _foreign_gpu(case),
    )
    return [lane for lane in found if lane is not None]


def marked_rounds(ls: list[Lane]) -> list[tuple[int, list[str]]]:
    """Each round any lane marked, with every phrase said of it, in round order."""
    by_round: dict[int, list[str]] = {}
    for lane in ls:
        for r, what in lane.marks.items():
            by_round.setdefault(r, []).append(f"{lane.name}: {what}")
    return sorted(by_round.items())
