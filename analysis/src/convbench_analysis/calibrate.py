"""`calibrate`: the instrument's own error, from runs with A/A twins (bench_conv adds one per kind
of case by default, `--twins all` one per case; an arm listed twice runs as `arm#2`).

Over every twin pair of the runs: how often its interval holds 1 (the coverage the report's
intervals claim), how often it is called FASTER or SLOWER (a false verdict), how often the checks
refuse it (a false refusal: the runs were clean), and per kind of case (host, per-call,
resident) the smallest widening floor that would give the stated coverage over these runs (to
set aa_floor_<kind> from one batch of runs and check it on another)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace

import numpy as np

from . import record, tables, verdicts
from .checks import pair_findings, seconds, spread_of
from .findings import Assessment


def _pairs(a: Assessment):
    """(run index, twin, its statement, the checks' reasons) for every twin pair of the runs."""
    th = a.thresholds
    for i, run in enumerate(a.runs):
        ts = verdicts.twins(run.cases, th.ci_level)
        for t in ts:
            st = verdicts.twin_statement(t, ts, th)
            if st is None:
                continue
            reasons = a.for_case(i, t.twin["id"]) + [
                f for f in a.for_case(i, t.arm["id"]) if f not in a.for_case(i, t.twin["id"])
            ]
            reasons += [f for f in pair_findings(run, t.twin, run, t.arm, th) if f.refuses]
            yield i, t, ts, st, reasons


def _needed_floor(items: list, th, kind: str) -> float | None:
    """The smallest floor for `kind` at which >= ci_level of its twins' intervals hold 1."""
    if not items:
        return None
    lo, hi = 0.0, 0.2
    attr = {"host": "aa_floor_host", "per-call": "aa_floor_per_call"}.get(kind, "aa_floor_resident")

    def coverage(floor: float) -> float:
        t2 = replace(th, **{attr: floor})
        got = [verdicts.twin_statement(t, ts, t2) for t, ts in items]
        return float(np.mean([s.lo is not None and s.lo <= 1.0 <= s.hi for s in got]))

    if coverage(hi) < th.ci_level:
        return None
    if coverage(lo) >= th.ci_level:
        return 0.0
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if coverage(mid) >= th.ci_level:
            hi = mid
        else:
            lo = mid
    return hi


def _arm_rows(arms: dict) -> list[dict]:
    """Per arm: its noise floor (median CV of its cases) and what its A/A twins showed."""
    rows = []
    for key in sorted(arms):
        e = arms[key]
        n = len(e["aa"])
        rows.append(
            {
                "arm": key,
                "cases": len(e["cvs"]),
                "noise_floor_cv": float(np.median(e["cvs"])) if e["cvs"] else None,
                "aa_pairs": n,
                "aa_max_dev": float(max(abs(v - 1.0) for v in e["aa"])) if n else None,
                "aa_covered": int(e["covered"]),
                "aa_called": int(e["called"]),
                "aa_refused": e["refused"],
                "refusal_codes": dict(sorted(e["codes"].items())),
            }
        )
    return rows


def _per_kind(pairs: list[dict], kinds: dict, th) -> dict:
    """Per kind of case: its twins' coverage, false verdicts, the floor and the floor needed."""
    per_kind = {}
    for kind in verdicts.KINDS:
        ps = [p for p in pairs if p["kind"] == kind]
        if not ps:
            continue
        per_kind[kind] = {
            "pairs": len(ps),
            "coverage": sum(p["covers_one"] for p in ps) / len(ps),
            "called": sum(p["verdict"] in ("FASTER", "SLOWER") for p in ps),
            "floor": verdicts.floor_of(kind, th),
            "floor_needed": _needed_floor(kinds[kind], th, kind),
        }
    return per_kind


def build(a: Assessment) -> dict:
    th = a.thresholds
    arms = defaultdict(
        lambda: {"cvs": [], "aa": [], "refused": 0, "covered": 0, "called": 0, "codes": {}}
    )
    for run in a.runs:
        for c in run.cases:
            x = seconds(c)
            if len(x) >= 2 and not verdicts.is_twin(c):
                arms[record.label(c)]["cvs"].append(spread_of(x)[0])
    kinds = defaultdict(list)
    pairs = []
    for _i, t, ts, st, reasons in _pairs(a):
        e = arms[record.label(t.arm)]
        covered = st.lo is not None and st.lo <= 1.0 <= st.hi
        called = st.verdict in ("FASTER", "SLOWER")
        e["aa"].append(st.value)
        e["covered"] += covered
        e["called"] += called
        if reasons:
            e["refused"] += 1
            for f in reasons:
                e["codes"][f.code] = e["codes"].get(f.code, 0) + 1
        if not t.kernels_differ:
            kinds[t.kind].append((t, ts))
        pairs.append(
            {
                "twin": record.label(t.twin),
                "arm": record.label(t.arm),
                "case": t.twin["id"],
                "kind": t.kind,
                "ratio": st.value,
                "ci": [st.lo, st.hi] if st.lo is not None else None,
                "verdict": st.verdict,
                "covers_one": covered,
                "refused": bool(reasons),
                "kernels_differ": list(t.kernels_differ) if t.kernels_differ else None,
            }
        )
    rows = _arm_rows(arms)
    total = len(pairs)
    per_kind = _per_kind(pairs, kinds, th)

    def rate(key) -> float | None:
        return sum(bool(p[key]) for p in pairs) / total if total else None

    return {
        "runs": [r.path for r in a.runs],
        "level": th.ci_level,
        "band": th.equivalence_band,
        "arms": rows,
        "kinds": per_kind,
        "pairs": pairs,
        "aa_pairs": total,
        "aa_refused": sum(p["refused"] for p in pairs),
        "false_refusal_rate": rate("refused"),
        "coverage": rate("covers_one"),
        "false_verdict_rate": (
            sum(p["verdict"] in ("FASTER", "SLOWER") for p in pairs) / total if total else None
        ),
    }


def _pct(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1%}"


ARM_HEADERS = (
    "arm",
    "cases",
    "CV floor",
    "A/A",
    "max |r-1|",
    "hold 1",
    "called",
    "refused",
    "codes",
)
ARM_ALIGN = ("left", *["right"] * 7, "left")
KIND_HEADERS = ("kind", "pairs", "intervals hold 1", "called FASTER/SLOWER", "floor", "needed")
KIND_ALIGN = ("left", *["right"] * 5)


def _arm_cells(r: dict) -> list:
    cv = f"{r['noise_floor_cv']:.2%}" if r["noise_floor_cv"] is not None else "-"
    dev = f"{r['aa_max_dev']:.2%}" if r["aa_max_dev"] is not None else "-"
    codes = ", ".join(f"{k} x{v}" for k, v in r["refusal_codes"].items()) or "-"
    counts = (r["aa_pairs"], r["aa_covered"], r["aa_called"], r["aa_refused"])
    return [r["arm"], r["cases"], cv, counts[0], dev, *counts[1:], codes]


def _kind_cells(kind: str, k: dict) -> list:
    need = f"{k['floor_needed']:.2%}" if k["floor_needed"] is not None else "none reaches it"
    return [kind, k["pairs"], _pct(k["coverage"]), k["called"], f"{k['floor']:.2%}", need]


def render(rep: dict, fmt: str = "text") -> str:
    """Per arm its noise floor and A/A twins, then per kind of case the widening floor it has
    and the least that would do; csv: the per-arm table alone."""
    arms = tables.render(ARM_HEADERS, [_arm_cells(r) for r in rep["arms"]], fmt, ARM_ALIGN)
    if fmt == "csv":
        return arms
    lines = [
        tables.sentence(
            f"calibration over {len(rep['runs'])} run(s): per arm, the noise floor (median CV "
            "of its cases) and its A/A twins",
            fmt,
        ),
        "",
        arms,
        "",
    ]
    if not rep["aa_pairs"]:
        text = "no A/A twins in these runs: bench_conv --twins kinds (the default) or all"
        return "\n".join([*lines, tables.sentence(text, fmt)])
    lines += [
        tables.sentence(
            "per kind of case: the interval's widening floor, and the least that would give "
            f"{rep['level']:.0%} over these runs:",
            fmt,
        ),
        "",
        tables.render(
            KIND_HEADERS, [_kind_cells(*kv) for kv in rep["kinds"].items()], fmt, KIND_ALIGN
        ),
        "",
        tables.sentence(
            f"over {rep['aa_pairs']} clean A/A pairs: {_pct(rep['coverage'])} of the "
            f"{rep['level']:.0%} intervals hold 1; {_pct(rep['false_verdict_rate'])} called "
            f"FASTER or SLOWER (band {rep['band']:.0%}); the checks would refuse "
            f"{rep['aa_refused']} ({_pct(rep['false_refusal_rate'])})",
            fmt,
        ),
    ]
    return "\n".join(lines)
