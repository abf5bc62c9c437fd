"""What the schema cannot say: a record that contradicts itself is refused as bad input (exit 2,
one line naming the field), never believed. Every summary the analysis uses is recomputed from
the raw samples; a stored summary that disagrees with them is a contradiction too."""

from __future__ import annotations

import math

from .errors import InputError
from .record import Case, Lease, Plan, parse_utc


def _fail(where: str, field: str, message: str):
    raise InputError(where, field, message)


def _times(data: dict, where: str) -> None:
    t = {}
    for key in ("started_utc", "ended_utc"):
        try:
            t[key] = parse_utc(data[key])
        except ValueError:
            _fail(where, f"$.{key}", f"{data[key]!r} is not an ISO-8601 UTC time")
    if t["ended_utc"] < t["started_utc"]:
        _fail(
            where,
            "$.ended_utc",
            f"{data['ended_utc']} is before $.started_utc {data['started_utc']}",
        )


def _lease(data: dict, where: str) -> None:
    lease = Lease.of(data["lease"])
    n = lease.foreign_gpu_processes_max
    if lease.collected and lease.observation:
        seen = max(
            (
                n
                for c in data["cases"]
                for s in Case.of(c).samples
                for n in s.foreign_gpu_processes()
            ),
            default=0,
        )
        if seen > n:
            _fail(
                where,
                "$.lease.observation.foreign_gpu_processes_max",
                f"{n}, but a sample saw {seen} foreign GPU process(es)",
            )
    if not lease.collected or lease.verdict != "valid":
        return
    if n > 0:
        _fail(
            where,
            "$.lease.verdict",
            f"'valid' but $.lease.observation.foreign_gpu_processes_max = {n}",
        )
    if lease.foreign_gpu_samples:
        _fail(
            where,
            "$.lease.verdict",
            f"'valid' but $.lease.observation.foreign_gpu_samples lists "
            f"{len(lease.foreign_gpu_samples)} case(s)",
        )
    for k in ("start_check", "end_check"):
        if isinstance(lease.get(k), dict) and lease[k].get("ok") is False:
            _fail(where, "$.lease.verdict", f"'valid' but $.lease.{k}.ok is false")


def _case(data: dict, i: int, c: Case, rounds: int | None, where: str) -> None:
    at = f"$.cases[{i}]"
    want = f"{c.stage}/{c.frames}/{c.arm}/{c.staging}"
    if c.id != want:
        _fail(where, f"{at}.id", f"{c.id!r} disagrees with its fields ({want!r})")
    if (c.staging == "host") == c.device:
        _fail(where, f"{at}.device", f"{c['device']} with staging {c.staging!r}")
    g = c.gate
    if g.result == "pass" and g.kind == "bitwise" and (g.mismatches or 0) > 0:
        _fail(
            where,
            f"{at}.gate.result",
            f"'pass' but a bitwise gate with {g.mismatches} mismatching cells",
        )
    samples = c.samples
    if g.result in ("fail", "not-run") and samples:
        _fail(where, f"{at}.samples", f"{len(samples)} samples of an arm that failed its gate")
    if rounds is not None and len(samples) > rounds:
        _fail(
            where, f"{at}.samples", f"{len(samples)} samples, more than the run's {rounds} rounds"
        )
    seen = set()
    for j, s in enumerate(samples):
        if s.round in seen:
            _fail(where, f"{at}.samples[{j}].round", f"round {s.round} sampled twice")
        seen.add(s.round)
        if rounds is not None and s.round >= rounds:
            _fail(where, f"{at}.samples[{j}].round", f"{s.round} >= the run's {rounds} rounds")
        if s.iterations < 1:
            _fail(where, f"{at}.samples[{j}].iterations", f"{s.iterations} < 1")
        total, per = s.total_seconds, s.seconds
        if total is not None and not math.isclose(total, per * s.iterations, rel_tol=1e-6):
            _fail(
                where,
                f"{at}.samples[{j}].total_seconds",
                f"{total:.6g} s, but seconds x iterations = {per * s.iterations:.6g} s",
            )
    st = c.stats
    if samples and st:
        best = min(s.seconds for s in samples)
        if not math.isclose(st["best"], best, rel_tol=1e-9):
            _fail(
                where,
                f"{at}.stats.best",
                f"{st['best']:.6g} s, but the samples' min is {best:.6g} s",
            )
        if st.get("n") is not None and st["n"] != len(samples):
            _fail(where, f"{at}.stats.n", f"{st['n']}, but {len(samples)} samples")


def check(data: dict, where: str) -> None:
    _times(data, where)
    rounds = Plan.of(data["plan"]).rounds
    seen = set()
    for i, c in enumerate(map(Case.of, data["cases"])):
        if c.id in seen:
            _fail(where, f"$.cases[{i}].id", f"duplicate case id {c.id!r}")
        seen.add(c.id)
        _case(data, i, c, rounds, where)
    _lease(data, where)
