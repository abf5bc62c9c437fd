"""`calibrate`: the instrument's own error, from runs with A/A twins (an arm listed twice runs
as `arm#2`). Per arm: its noise floor (the median CV of its cases over the runs), its A/A ratios,
and how often the gates would have refused a comparison of an arm with itself. A clean machine
refuses few (the test suite holds a synthetic clean corpus to <= 5%)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from . import record
from .findings import Assessment
from .gates import pair_findings, seconds, spread_of
from .pairs import TWIN
from .stats import DEFAULT_SEED, best_ratio


def build(a: Assessment, seed: int = DEFAULT_SEED) -> dict:
    th = a.thresholds
    arms = defaultdict(lambda: {"cvs": [], "aa": [], "refused": 0, "outside": 0, "codes": {}})
    for i, run in enumerate(a.runs):
        for c in run.cases:
            x = seconds(c)
            if len(x) >= 2:
                arms[TWIN.sub("", c["arm"]) + "/" + c["staging"]]["cvs"].append(spread_of(x)[0])
        by_label = {(c["stage"], c["frames"], record.label(c)): c for c in run.cases}
        for (stage, frames, lb), twin in by_label.items():
            arm, _, staging = lb.rpartition("/")
            if not TWIN.search(arm):
                continue
            first = by_label.get((stage, frames, f"{TWIN.sub('', arm)}/{staging}"))
            if first is None:
                continue
            key = record.label(first)
            entry = arms[key]
            reasons = a.for_case(i, twin["id"]) + a.for_case(i, first["id"])
            reasons += [f for f in pair_findings(run, twin, run, first, th) if f.refuses]
            if reasons:
                entry["refused"] += 1
                for f in reasons:
                    entry["codes"][f.code] = entry["codes"].get(f.code, 0) + 1
            x, bx = seconds(twin), seconds(first)
            if len(x) and len(bx):
                r = best_ratio(x, bx, int(th.bootstrap_resamples), th.ci_level, seed)
                entry["aa"].append(r.value)
                entry["outside"] += abs(r.value - 1.0) > th.aa_tolerance
    rows, total, refused = [], 0, 0
    for key in sorted(arms):
        e = arms[key]
        n = len(e["aa"])
        total, refused = total + n, refused + e["refused"]
        rows.append(
            {
                "arm": key,
                "cases": len(e["cvs"]),
                "noise_floor_cv": float(np.median(e["cvs"])) if e["cvs"] else None,
                "aa_pairs": n,
                "aa_max_dev": float(max(abs(v - 1.0) for v in e["aa"])) if n else None,
                "aa_refused": e["refused"],
                "aa_outside": int(e["outside"]),
                "refusal_codes": dict(sorted(e["codes"].items())),
            }
        )
    return {
        "runs": [r.path for r in a.runs],
        "aa_tolerance": th.aa_tolerance,
        "arms": rows,
        "aa_pairs": total,
        "aa_refused": refused,
        "false_refusal_rate": refused / total if total else None,
    }


def render(rep: dict) -> str:
    lines = [
        f"calibration over {len(rep['runs'])} run(s): per arm, the noise floor (median CV of its "
        "cases) and its A/A twins",
        f"  {'arm':<26}{'cases':>6}{'CV floor':>10}{'A/A':>5}{'max |r-1|':>11}"
        f"{'refused':>9}{'outside':>9}  codes",
    ]
    for r in rep["arms"]:
        cv = f"{r['noise_floor_cv']:.2%}" if r["noise_floor_cv"] is not None else "-"
        dev = f"{r['aa_max_dev']:.2%}" if r["aa_max_dev"] is not None else "-"
        codes = ", ".join(f"{k} x{v}" for k, v in r["refusal_codes"].items()) or "-"
        lines.append(
            f"  {r['arm']:<26}{r['cases']:>6}{cv:>10}{r['aa_pairs']:>5}{dev:>11}"
            f"{r['aa_refused']:>9}{r['aa_outside']:>9}  {codes}"
        )
    if rep["aa_pairs"]:
        lines.append(
            f"the gates would refuse {rep['aa_refused']} of {rep['aa_pairs']} clean A/A "
            f"comparisons ({rep['false_refusal_rate']:.1%}); outside 1 +- "
            f"{rep['aa_tolerance']:g}: {sum(r['aa_outside'] for r in rep['arms'])}"
        )
    else:
        lines.append("no A/A twins in these runs: list an arm twice (--arms cuda-f32,cuda-f32)")
    return "\n".join(lines)
