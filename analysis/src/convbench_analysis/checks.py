"""The checks behind the findings: per run (the lease), per case (correctness, rounds, spread,
the host's and the GPU's probes) and per ratio (the two arms' throttling). A check refuses only
for an effect it can show in the samples; a flag without an effect becomes a note.

Cross-run checks: timing mode and drift with its cause in drift.py, lease overlap in overlap.py;
assess.py runs them all. Thresholds come from thresholds.Thresholds only."""

from __future__ import annotations

import math

import numpy as np

from . import record
from .findings import Finding
from .load import Run
from .stats import median_half_width
from .thresholds import Thresholds


def seconds(case: dict) -> np.ndarray:
    return np.array([s.seconds for s in record.Case.of(case).samples], dtype=float)


def spread_of(x: np.ndarray) -> tuple[float, float]:
    """(cv, max/min) of round samples; cv with n-1 like pyperf and Google Benchmark."""
    if len(x) < 2:
        return 0.0, 1.0
    mean = float(x.mean())
    cv = float(x.std(ddof=1) / mean) if mean > 0 else math.inf
    mn = float(x.min())
    return cv, (float(x.max()) / mn if mn > 0 else math.inf)


def robust_cv(x: np.ndarray) -> float:
    """1.4826 x MAD / median: the noise of the bulk of the samples, blind to one outlier."""
    if len(x) < 2:
        return 0.0
    med = float(np.median(x))
    return float(1.4826 * np.median(np.abs(x - med)) / med) if med > 0 else 0.0


def beyond_noise(t: float, others: np.ndarray, th: Thresholds) -> tuple[bool, float, float]:
    """Is t slower than the best of `others` beyond their noise? (slower, t/best, allowed)."""
    if not len(others) or others.min() <= 0:
        return False, 1.0, 0.0
    allowed = max(th.slow_sample_k * robust_cv(others), th.slow_sample_floor)
    rel = t / float(others.min())
    return rel > 1.0 + allowed, rel, allowed


def cpu_ranges(cpus: list[int]) -> str:
    """[0, 1, 2, 3, 5] -> '0-3,5'"""
    out, cpus = [], sorted(set(cpus))
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


# ---- run-level ---------------------------------------------------------------------------


def lease_findings(run: Run, th: Thresholds) -> list[Finding]:
    lease, p, out = run.lease, run.path, []
    if not lease.collected:
        why = lease.why
        out.append(
            Finding(
                "lease-none", f"lease status {lease.status!r}" + (f" ({why})" if why else ""), p
            )
        )
        return out
    if lease.token in (None, ""):
        out.append(Finding("lease-none", "the lease block has no token", p))
    if lease.verdict == "outside-lease":
        out.append(Finding("lease-none", "verdict outside-lease (run with --no-lease)", p))
    if lease.verdict == "void":
        why = "; ".join(lease.reasons)
        out.append(Finding("lease-void", "verdict void" + (f": {why}" if why else ""), p))
    gap, ttl = lease.max_renew_gap_s, lease.ttl_s
    if gap is not None and ttl and gap >= th.renew_gap_fraction * ttl:
        out.append(
            Finding(
                "lease-expired",
                f"max renewal gap {gap:.3g} s >= {th.renew_gap_fraction:g} x TTL {ttl:.3g} s",
                p,
            )
        )
    status = record.run_status(run)
    if status != "complete":
        short = [c.id for c in run.cases if c.stop_reason == "interrupted"]
        fault = run.fault
        out.append(
            Finding(
                "run-incomplete",
                f"status {status}"
                + (f" (arm {fault.arm} faulted in its {fault.during})" if fault else "")
                + (f"; {len(short)} case(s) cut short" if short else ""),
                p,
            )
        )
    return out


# ---- case-level --------------------------------------------------------------------------


def _rounds_and_spread(run: Run, case: dict, th: Thresholds) -> list[Finding]:
    p, cid, out = run.path, case.id, []
    x = seconds(case)
    if len(x) < th.min_rounds:
        out.append(Finding("too-few-rounds", f"{len(x)} timed rounds < {th.min_rounds:g}", p, cid))
    cv, spread = spread_of(x)
    cv_max, sp_max = (
        (th.device_cv_max, th.device_spread_max)
        if case.device
        else (th.host_cv_max, th.host_spread_max)
    )
    # A host arm's CV above its limit is judged by what it does to the estimate: with enough
    # rounds (adaptive rounds add them) the median's interval can be narrow although single
    # samples scatter; the max/min limit still catches a run whose samples fall in two groups.
    hw = None
    if not case.device and spread <= sp_max and cv > cv_max:
        hw = median_half_width(x)
    if hw is not None and hw <= th.host_ci_max:
        out.append(
            Finding(
                "spread-noted",
                f"CV {cv:.2%} (limit {cv_max:.0%}) over {len(x)} rounds, but the median's 95% "
                f"interval is +-{hw:.2%} (limit {th.host_ci_max:.0%}) and max/min {spread:.3f}",
                p,
                cid,
            )
        )
    elif cv > cv_max or spread > sp_max:
        out.append(
            Finding(
                "spread",
                f"max/min {spread:.3f} (limit {sp_max:g}), CV {cv:.2%} "
                f"(limit {cv_max:.0%}) over {len(x)} rounds",
                p,
                cid,
            )
        )
    if case.stop_reason == "interrupted":
        out.append(
            Finding(
                "cut-short",
                f"interrupted after {len(x)} rounds, before its stopping rule decided",
                p,
                cid,
            )
        )
    elif record.ci_reached(case) is False:
        target = record.ci_target(case)
        out.append(
            Finding(
                "ci-not-reached",
                f"stopped by {case.stop_reason or 'its budget'} after {len(x)} rounds"
                + (f" before the {target:.2%} interval target" if target else ""),
                p,
                cid,
            )
        )
    return out


def _host_threads(run: Run, sample: dict) -> int:
    hs = record.host_speed(sample)
    return len(hs["workers"]) if hs else int(run.plan.threads or 1)


def _foreign_cpu(run: Run, case: dict, th: Thresholds) -> list[Finding]:
    p, cid = run.path, case.id
    samples = case.samples
    x = seconds(case)
    refusals, noise = [], []
    for j, s in enumerate(samples):
        share, res = record.foreign_share(s)
        if share <= th.foreign_cpu_share_max:
            continue
        if share <= res:
            noise.append(f"round {s.round}: {share:.3f} <= its tick resolution {res:.3f}")
            continue
        c = record.contention(s) or {}
        window_us = s.window_s * 1e6
        evidence = []
        if c.get("psi_some_us") is not None and window_us > 0:
            psi = c["psi_some_us"] / window_us
            if psi > th.psi_some_max:
                evidence.append(f"PSI some {psi:.0%} of the sample")
        if c.get("nivcsw") is not None and window_us > 0:
            rate = c["nivcsw"] / (_host_threads(run, s) * window_us / 1e6)
            if rate > th.preempt_per_thread_s_max:
                evidence.append(f"{c['nivcsw']} involuntary switches ({rate:.0f}/thread-s)")
        slow, rel, _ = beyond_noise(float(x[j]), np.delete(x, j), th)
        if slow:
            evidence.append(f"{rel:.2f}x the best of the other rounds")
        if not evidence:
            noise.append(f"round {s.round}: {share:.3f}, and the arm lost no time")
            continue
        who = record.top_foreign(s) or record.top_foreign_of(samples)
        refusals.append(
            Finding(
                "foreign-cpu",
                f"round {s.round}: foreign CPU share {share:.3f} (resolution {res:.3f}); "
                + ", ".join(evidence)
                + (f"; top: {who}" if who else ""),
                p,
                cid,
                f"re-run when {who} is gone, or hold the host lease" if who else None,
            )
        )
    if refusals:
        return refusals[:1] if len(refusals) == 1 else [_merge(refusals)]
    waited = _pinned_cpu_shared(run, case, th)
    if waited:
        return waited
    if noise:
        return [Finding("foreign-cpu-noise", "; ".join(noise[:3]), p, cid)]
    return []


def _pinned_cpu_shared(run: Run, case: dict, th: Thresholds) -> list[Finding]:
    """A process busy on one of a pinned arm's CPUs: the worker pinned there waits for its CPU
    (schedstat run delay) while the machine-wide foreign share stays small (one CPU of 16) and
    may be under its tick resolution. Refused when it happens in more than host_slow_rounds_max
    of the rounds (then the median and the best are the contended ones); fewer are said."""
    if not record.pinned_cpus(run):
        return []  # unpinned workers also queue behind each other: run delay is not foreign
    p, cid = run.path, case.id
    samples = case.samples
    hits = []
    for s in samples:
        w = record.most_delayed_thread(s)
        if w and w["share"] > th.run_delay_share_max:
            hits.append((s, w))
    if not hits:
        return []
    s, w = max(hits, key=lambda h: h[1]["share"])
    cpus = sorted({h[1]["cpu"] for h in hits if h[1]["cpu"] is not None})
    who = record.top_foreign_of(samples)
    detail = (
        f"worker {w['worker']} (cpu {w['cpu']}) waited for its CPU {w['share']:.0%} of round "
        f"{s.round}'s sample (schedstat run delay {w['run_delay_s'] * 1e3:.3g} ms); "
        f"{len(hits)} of {len(samples)} rounds had a worker waiting over "
        f"{th.run_delay_share_max:.0%}, on cpu {cpu_ranges(cpus)}"
        + (f"; top foreign process in the case's windows: {who}" if who else "")
    )
    if len(hits) >= th.host_slow_rounds_max * len(samples):
        return [
            Finding(
                "foreign-cpu",
                detail,
                p,
                cid,
                (f"re-run when {who} is gone, or " if who else "")
                + f"pin the arm away from cpu {cpu_ranges(cpus)} (bench_conv --cpus)",
            )
        ]
    return [
        Finding(
            "foreign-cpu-noise",
            detail + ": too few rounds to move the best or the median",
            p,
            cid,
        )
    ]


def _merge(fs: list[Finding]) -> Finding:
    f = fs[0]
    more = f" (and {len(fs) - 1} more round(s))"
    return Finding(f.code, f.detail + more, f.path, f.case_id, f.remedy_detail)


def _stolen_rounds(run: Run, case: dict, th: Thresholds) -> list[tuple[int, float]]:
    """(index, steal share) of each round the hypervisor stole over steal_share_max of the
    CPUs' time from, and more than two ticks of the sample's window (USER_HZ 100 on every CPU)."""
    cpus = run.cores
    out = []
    for j, s in enumerate(case.samples):
        share, wall = (record.contention(s) or {}).get("steal_share"), s.wall_s
        if share is None or share <= th.steal_share_max:
            continue
        ticks = (wall or 0.0) * cpus * 100.0
        if ticks > 0 and share * ticks <= 2.0:
            continue  # within two ticks: resolution, not evidence
        out.append((j, float(share)))
    return out


def _slowed_stolen_rounds(run: Run, case: dict, th: Thresholds) -> list[tuple[int, float, float]]:
    """(index, slowdown, steal) of each stolen round slower beyond noise than the best of the
    unstolen rounds; none when every round was stolen (nothing to set them against)."""
    stolen = dict(_stolen_rounds(run, case, th))
    return [(j, rel, stolen[j]) for j, rel, _ in _slower_than_the_rest(case, list(stolen), th)]


def _slower_than_the_rest(case: dict, flagged: list[int], th: Thresholds):
    """(index, slowdown, allowed) of each flagged round slower beyond noise than the best of the
    unflagged ones; none when every round is flagged."""
    x = seconds(case)
    others = np.delete(x, flagged)
    if not flagged or not len(others):
        return []
    out = []
    for j in flagged:
        slow, rel, allowed = beyond_noise(float(x[j]), others, th)
        if slow:
            out.append((j, rel, allowed))
    return out


def _host_steal(run: Run, case: dict, th: Thresholds) -> list[Finding]:
    """The hypervisor ran other guests on this VM's CPUs during the slow rounds: no process
    here to name (the foreign share counts steal, no process holds it), the CPUs' own speed
    probes between samples see nothing. Refused when at least host_slow_rounds_max of the
    rounds; fewer are said, and the spread is judged without them."""
    slowed = _slowed_stolen_rounds(run, case, th)
    if not slowed:
        return []
    samples = case.samples
    j, rel, share = max(slowed, key=lambda t: t[1])
    rounds = ", ".join(str(samples[k].round) for k, _, _ in sorted(slowed)[:6])
    detail = (
        f"round {samples[j].round}: the hypervisor took {share:.0%} of the CPUs' time (steal) "
        f"during the sample, which took {rel:.2f}x the best of the unstolen rounds; "
        f"{len(slowed)} of {len(samples)} rounds stolen and slowed (rounds {rounds})"
    )
    remedy = (
        "steal is other guests on the same physical CPUs, not a process here: re-run when "
        "the host is quieter, or on a dedicated (bare-metal or exclusive) host"
    )
    if len(slowed) >= th.host_slow_rounds_max * len(samples):
        return [Finding("host-steal", detail, run.path, case.id, remedy)]
    return [
        Finding(
            "host-steal-noted",
            detail + ": the best and the median are values of unstolen rounds",
            run.path,
            case.id,
        )
    ]


def _spread_without_slowed(run: Run, case: dict, th: Thresholds) -> bool:
    """Whether the case's rounds that neither a slow CPU nor the hypervisor's steal slowed are
    within the host spread limits."""
    slowed = {j for j, _, _ in _slowed_host_rounds(case, th)}
    slowed |= {j for j, _, _ in _slowed_stolen_rounds(run, case, th)}
    x = seconds(case)
    rest = np.array([v for j, v in enumerate(x) if j not in slowed])
    if len(rest) < th.min_rounds:
        return False
    cv, spread = spread_of(rest)
    return cv <= th.host_cv_max and spread <= th.host_spread_max


def _slow_cpu_rounds(case: dict, th: Thresholds) -> list[int]:
    """Indices of the rounds whose slowest CPU delivered under host_speed_min_relative."""
    return [
        j
        for j, s in enumerate(case.samples)
        if (w := record.slowest_worker(s)) and w.get("relative", 1.0) < th.host_speed_min_relative
    ]


def _slowed_host_rounds(case: dict, th: Thresholds) -> list[tuple[int, float, float]]:
    """(index, slowdown, allowed) of each round on a slow CPU whose time is beyond noise against
    the full-speed rounds; none when every round was on a slow CPU (consistent: drift against
    other runs names it)."""
    return _slower_than_the_rest(case, _slow_cpu_rounds(case, th), th)


def _host_speed(run: Run, case: dict, th: Thresholds) -> list[Finding]:
    p, cid = run.path, case.id
    samples = case.samples
    slowed = _slowed_host_rounds(case, th)
    if not slowed:
        return []
    full = sorted(
        {
            w["cpu"]
            for s in samples
            for w in (record.host_speed(s) or {}).get("workers", [])
            if w.get("relative", 1.0) >= 0.9 and w.get("cpu") is not None
        }
        - {record.slowest_worker(samples[j]).get("cpu") for j in _slow_cpu_rounds(case, th)}
    )
    j, rel, allowed = max(slowed, key=lambda t: t[1])
    s, w = samples[j], record.slowest_worker(samples[j])
    peak = w["adds_per_s"] / w["relative"] if w.get("relative") else None
    of = f" of {peak / 1e9:.2g}" if peak else ""
    detail = (
        f"round {s.round}: cpu {w.get('cpu')} delivered "
        f"{w['adds_per_s'] / 1e9:.2g} G/s{of} ({w['relative']:.2f}); the sample took "
        f"{rel:.2f}x the best of the rounds on full-speed CPUs (allowed {1 + allowed:.2f}); "
        f"{len(slowed)} of {len(samples)} rounds slowed so"
    )
    remedy = (
        f"pin the arm to cpus {cpu_ranges(full)}, which delivered full speed (bench_conv --cpus)"
        if full
        else None
    )
    if len(slowed) >= th.host_slow_rounds_max * len(samples):
        return [Finding("host-speed", detail, p, cid, remedy)]
    return [
        Finding(
            "host-speed-noted",
            detail + ": the best and the median are values of full-speed rounds",
            p,
            cid,
            remedy,
        )
    ]


def _foreign_gpu(run: Run, case: dict) -> list[Finding]:
    p, cid = run.path, case.id
    observed = run.lease.foreign_gpu_samples
    foreign = [(s.round, n) for s in case.samples for n in s.foreign_gpu_processes()]
    foreign = [(r, n) for r, n in foreign if n > 0]
    if foreign:
        r, n = max(foreign, key=lambda t: t[1])
        return [Finding("foreign-gpu", f"{n} foreign process(es) on the GPU in round {r}", p, cid)]
    if cid in observed:
        return [
            Finding(
                "foreign-gpu",
                "the lease observation lists this case among samples with a foreign GPU process",
                p,
                cid,
            )
        ]
    return []


def _clock_and_throttle(run: Run, case: dict, th: Thresholds) -> list[Finding]:
    p, cid, out = run.path, case.id, []
    samples = case.samples
    clock_max = (record.gpu_of(run) or {}).get("sm_clock_max_mhz")
    low = []
    for s in samples:
        mhz = record.measured_clock(s)
        if clock_max and mhz is not None and mhz < th.sm_clock_min_fraction * clock_max:
            low.append((s.round, mhz))
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
    capped, eff, allowed = _cap_effect(case, th)
    if not capped:
        return out
    reasons = sorted({r for j in capped for r in record.throttle_reasons(samples[j])})
    what = ", ".join(reasons) or "violation time"
    frac, how = record.capped_fraction(case)
    clocks = [record.measured_clock(samples[j]) for j in capped]
    clocks = [c for c in clocks if c is not None]
    at = f" at >= {min(clocks):.0f} MHz" if clocks else ""
    free = len(samples) - len(capped)
    rounds = ", ".join(str(samples[j].round) for j in capped[:6])
    if eff is not None:
        if eff > allowed:
            out.append(
                Finding(
                    "throttle",
                    f"{what} in round(s) {rounds}: those samples' median {eff:+.2%} against "
                    f"the {free} unthrottled (allowed {allowed:.2%})",
                    p,
                    cid,
                )
            )
            return out
        effect = f"no slower than the {free} unthrottled ({eff:+.2%})"
    else:
        effect = "in every round, so no unthrottled sample to set against (the clock gate holds)"
    out.append(
        Finding(
            "throttle-noted",
            f"{what} in {len(capped)} of {len(samples)} rounds ({frac:.0%} of the time by "
            f"{how}){at}; {effect}",
            p,
            cid,
        )
    )
    return out


def _cap_effect(case: dict, th: Thresholds) -> tuple[list[int], float | None, float]:
    """The capped samples' indices, their median's slowdown against the uncapped ones' (None with
    fewer than two uncapped), and the slowdown allowed: max(throttle_k x their CV, floor)."""
    samples = case.samples
    capped = [
        j
        for j, s in enumerate(samples)
        if record.throttle_reasons(s) or (record.capped_us(s) or 0.0) > 0.0
    ]
    x = seconds(case)
    free = np.delete(x, capped)
    if not capped or len(free) < 2:
        return capped, None, 0.0
    eff = float(np.median(x[capped]) / np.median(free)) - 1.0
    return capped, eff, max(th.throttle_k * robust_cv(free), th.throttle_floor)


def _cap_without_effect(case: dict, th: Thresholds) -> bool:
    """True when the case's capped samples are measured no slower than its uncapped ones (the
    per-case throttle gate's test); False when they are slower, or when too few samples ran
    uncapped to tell (a case capped in every round)."""
    capped, eff, allowed = _cap_effect(case, th)
    return not capped or (eff is not None and eff <= allowed)


def case_findings(run: Run, case: dict, th: Thresholds) -> list[Finding]:
    p, cid = run.path, case.id
    fault = run.fault
    if fault and fault.arm == case.arm:
        return [
            Finding(
                "arm-faulted",
                f"the run ended at this arm's fault in its {fault.during}: {fault.message}",
                p,
                cid,
            )
        ]
    if case.gate.result == "not-run":
        return [
            Finding(
                "cut-short",
                "the run was interrupted before this case's correctness gate: never gated, "
                "never timed",
                p,
                cid,
            )
        ]
    if case.gate.result == "fail":
        return [
            Finding("gate-failed", case.gate.summary(), p, cid)
        ]  # never timed: nothing else to judge
    out = _rounds_and_spread(run, case, th)
    if not case.samples:
        return out
    if not case.device:
        named = _foreign_cpu(run, case, th) + _host_speed(run, case, th)
        named += _host_steal(run, case, th)
        noted = {"host-speed-noted", "host-steal-noted"}
        if any(f.refuses for f in named):  # the named cause explains the spread: say it once
            out = [f for f in out if f.code != "spread"]
        elif any(f.code in noted for f in named) and _spread_without_slowed(run, case, th):
            # The few rounds on a slow or stolen CPU are the scatter; the others agree: said,
            # accepted.
            out = [f for f in out if f.code != "spread"]
        return out + named
    named = _clock_and_throttle(run, case, th)
    if any(f.code in ("throttle", "clock") for f in named):
        out = [f for f in out if f.code != "spread"]
    return out + _foreign_gpu(run, case) + named


# ---- one ratio ---------------------------------------------------------------------------


def pair_findings(run_num: Run, num: dict, run_den: Run, den: dict, th: Thresholds) -> list:
    """What only the two cases together can show: throttling that differs between the arms."""
    if not (num.device and den.device):
        return []
    fa, how_a = record.capped_fraction(num)
    fb, how_b = record.capped_fraction(den)
    if max(fa, fb) <= 0.0:
        return []
    how = how_a if how_a == how_b else f"{how_a} / {how_b}"
    clocks = [
        record.measured_clock(s)
        for c in (num, den)
        for s in c.samples
        if record.measured_clock(s) is not None
    ]
    at = f" at >= {min(clocks):.0f} MHz" if clocks else ""
    text = f"{num.arm} capped {fa:.0%} of its time, {den.arm} {fb:.0%} (by {how}){at}"
    if abs(fa - fb) > th.throttle_fraction_diff_max:
        # The fractions differ; the ratio is biased only if the cap slowed a capped arm. Where
        # each capped arm's own capped samples are measured no slower than its uncapped ones,
        # the cap is said and the ratio stands.
        if all(_cap_without_effect(c, th) for c in (num, den)):
            return [
                Finding(
                    "throttle-differs-noted",
                    text + "; in each capped arm the capped samples are no slower than its "
                    "uncapped ones: the cap did not reach the times",
                    run_num.path,
                    num.id,
                )
            ]
        return [Finding("throttle-differs", text, run_num.path, num.id)]
    return [
        Finding(
            "throttle-alike",
            text + f"; within {th.throttle_fraction_diff_max:.0%} of each other: both arms alike",
            run_num.path,
            num.id,
        )
    ]
