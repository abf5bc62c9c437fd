"""`history CASE_ID`: one case over time from the history index, each run's best time with the
interval of its median, accepted or refused by its own gates, changepoints marked;
`plot --case CASE_ID` draws the same."""

from __future__ import annotations

import json

from .history import case_history, changepoints, open_index
from .load import InputError


def build(folder, case_id: str, host: str | None, th) -> dict:
    db = open_index(folder, th)
    try:
        pts = case_history(db, case_id, host)
    finally:
        db.close()
    if not pts:
        raise InputError(str(folder), "", f"no indexed run has case {case_id!r}")
    ok = [p for p in pts if p.accepted]
    cps = changepoints([p.best for p in ok], [p.cv for p in ok], th)
    starts = {ok[i].run_id for i in cps}
    return {
        "case": case_id,
        "folder": str(folder),
        "points": [p.__dict__ | {"changepoint": p.run_id in starts} for p in pts],
        "changepoints": [ok[i].run_id for i in cps],
        "method": "ruptures PELT, L2 on log(best), penalty 2 ln(n) (3 sigma)^2",
    }


def render(rep: dict) -> str:
    lines = [f"{rep['case']} in {rep['folder']} ({rep['method']}; '>>' starts a new level)"]
    lines.append(f"     {'started':<26}{'run':<10}{'best':>12}  {'median interval':<24}n  verdict")
    for p in rep["points"]:
        mark = ">>" if p["changepoint"] else "  "
        iv = f"[{p['lo']:.4g}, {p['hi']:.4g}] s"
        lines.append(
            f"  {mark} {p['started_utc']:<26}{p['run_id'][:8]:<10}{p['best']:>10.4g} s  "
            f"{iv:<24}{p['n']:<3}{'accepted' if p['accepted'] else 'REFUSED'}"
        )
    lines.append(f"{len(rep['changepoints'])} changepoint(s) among the accepted runs")
    return "\n".join(lines)


def draw(rep: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = rep["points"]
    fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
    xs = list(range(len(pts)))
    for x, p in zip(xs, pts, strict=True):
        ax.errorbar(
            x,
            p["best"],
            yerr=[[0], [max(0.0, p["hi"] - p["best"])]],
            fmt="o",
            mfc="C0" if p["accepted"] else "none",
            color="C0",
        )
        if p["changepoint"]:
            ax.axvline(x - 0.5, color="C3", ls="--")
    ax.set_xticks(xs, [p["started_utc"][:16] for p in pts], rotation=45, ha="right")
    ax.set_ylabel("best time per call (s)")
    ax.set_title(f"{rep['case']} over time (hollow: refused; dashed: changepoint)")
    fig.savefig(path)
    plt.close(fig)


def run(args, th) -> int:
    rep = build(args.history, args.case, args.host, th)
    print(json.dumps(rep, indent=1) if args.json else render(rep))
    return 0
