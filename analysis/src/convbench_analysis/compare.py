"""`compare A B`: the same arm (case id) across two runs, before/after a change: the ratio of
best times B/A with a bootstrap interval, and Mann-Whitney U on the round samples. Refused when
either run's case fails a check (including drift between A and B when they are the same binary)."""

from __future__ import annotations

import numpy as np

from . import record, tables
from .checks import seconds
from .findings import Assessment
from .report import _t
from .stats import DEFAULT_SEED, best_ratio, mann_whitney_u


def build(a: Assessment, arm: str | None = None, seed: int = DEFAULT_SEED) -> dict:
    th = a.thresholds
    ra, rb = a.runs
    cb = {c["id"]: c for c in rb.cases}
    rows, refused = [], 0
    for c in ra.cases:
        d = cb.get(c["id"])
        if d is None or (arm and arm not in (c["arm"], record.label(c))):
            continue
        reasons = a.for_case(0, c["id"]) + a.for_case(1, c["id"])
        xa, xb = seconds(c), seconds(d)
        row = {
            "case": c["id"],
            "n_a": int(len(xa)),
            "n_b": int(len(xb)),
            "median_a_s": float(np.median(xa)) if len(xa) else None,
            "median_b_s": float(np.median(xb)) if len(xb) else None,
            "reasons": [f.as_dict() for f in reasons],
            "status": "ok",
        }
        if reasons or not len(xa) or not len(xb):
            row["status"] = "REFUSED"
            refused += 1
        else:
            r = best_ratio(xb, xa, int(th.bootstrap_resamples), th.ci_level, seed)
            mw = mann_whitney_u(xb, xa)
            row.update(
                {
                    "ratio_b_over_a": r.value,
                    "ci": [r.lo, r.hi],
                    "u": mw.u,
                    "p": mw.p,
                    "method": mw.method,
                }
            )
            if mw.p < th.alpha:
                row["verdict"] = "B faster" if np.median(xb) < np.median(xa) else "B slower"
            else:
                row["verdict"] = "no significant difference"
                # with n rounds a side, the smallest exact two-sided p is 2/C(2n, n)
                if mw.method == "exact" and mw.p >= th.alpha and len(xa) + len(xb) < 9:
                    row["verdict"] += " (too few rounds for the test to reach alpha)"
        rows.append(row)
    return {
        "a": record.summary(ra),
        "b": record.summary(rb),
        "alpha": th.alpha,
        "run_findings": [f.as_dict() for f in a.all_findings() if f.case_id is None],
        "rows": rows,
        "refused": refused,
    }


HEADERS = ("case", "n A", "n B", "median A", "median B", "B/A", "95% CI", "U", "p", "verdict")
ALIGN = ("left", "right", "right", "right", "right", "right", "left", "right", "right", "left")


def cells(r: dict) -> list:
    head = [r["case"], r["n_a"], r["n_b"], _t(r["median_a_s"]), _t(r["median_b_s"])]
    if r["status"] == "REFUSED":
        codes = ", ".join(dict.fromkeys(f["code"] for f in r["reasons"])) or "no samples"
        return head + ["", "", "", "", f"REFUSED ({codes})"]
    return head + [
        f"{r['ratio_b_over_a']:.4g}",
        f"[{r['ci'][0]:.4g}, {r['ci'][1]:.4g}]",
        f"{r['u']:g}",
        f"{r['p']:.3g} ({r['method']})",
        r["verdict"],
    ]


def render(rep: dict, fmt: str = "text") -> str:
    table = tables.render(HEADERS, [cells(r) for r in rep["rows"]], fmt, ALIGN)
    if fmt == "csv":
        return table
    lines = [
        tables.sentence(f"{k.upper()} {r['path']} (lease {r['lease']}, git {r['git_sha']})", fmt)
        for k, r in (("a", rep["a"]), ("b", rep["b"]))
    ]
    lines += [
        "",
        table if rep["rows"] else "no case common to both runs",
    ]
    for r in rep["rows"]:
        for f in r["reasons"]:
            said = f"{r['case']}: {f['code']} [{f['file']}]: {f['detail']} (fix: {f['remedy']})"
            lines.append(tables.sentence(said, fmt))
    lines.append(
        f"{rep['refused']} comparison(s) refused" if rep["refused"] else "all comparisons accepted"
    )
    return "\n".join(lines)
