"""`history CASE_ID`: one case over time from the history index, each run's best time with the
interval of its median, accepted or refused by its own checks, changepoints marked;
`plot --case CASE_ID` draws the same. The committed example records (an `examples` folder of the
history folder, or any results/examples) are left out unless asked for: they are fixtures, not
the user's history."""

from __future__ import annotations

import math
from pathlib import Path

from . import tables
from .history import case_history, changepoints, open_index
from .load import InputError

EXAMPLES = "examples"


def is_example(path: str, folder) -> bool:
    p, root = Path(path), Path(folder).resolve()
    if p.is_relative_to(root / EXAMPLES):
        return True
    parts = p.parts
    return any(parts[i : i + 2] == ("results", EXAMPLES) for i in range(len(parts) - 1))


def build(folder, case_id: str, host: str | None, th, include_examples: bool = False) -> dict:
    db = open_index(folder, th)
    try:
        pts = case_history(db, case_id, host)
    finally:
        db.close()
    examples = [p for p in pts if is_example(p.path, folder)]
    if not include_examples:
        pts = [p for p in pts if not is_example(p.path, folder)]
    if not pts:
        also = (
            f" ({len(examples)} example record(s) left out: --include-examples)"
            if examples and not include_examples
            else ""
        )
        raise InputError(str(folder), "", f"no indexed run has case {case_id!r}{also}")
    ok = [p for p in pts if p.accepted]
    cps = changepoints([p.best for p in ok], [p.cv for p in ok], th)
    starts = {ok[i].run_id for i in cps}
    return {
        "case": case_id,
        "folder": str(folder),
        "examples": "included" if include_examples else f"{len(examples)} left out",
        "points": [p.__dict__ | {"changepoint": p.run_id in starts} for p in pts],
        "changepoints": [ok[i].run_id for i in cps],
        "method": "ruptures PELT, L2 on log(best), penalty 2 ln(n) (3 sigma)^2",
    }


def us(seconds: float) -> str:
    """Microseconds to four significant digits, never in exponent form (76500, 12.34, 0.1234)."""
    v = seconds * 1e6
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    return f"{v:.{max(0, 3 - math.floor(math.log10(abs(v))))}f}"


HEADERS = ("", "started", "run", "host", "best us", "median interval us", "n", "verdict")
ALIGN = ("left", "left", "left", "left", "right", "left", "right", "left")


def cells(p: dict) -> list:
    return [
        ">>" if p["changepoint"] else "",
        p["started_utc"],
        p["run_id"][:8],
        p["host_name"] or (p["host"] or "?")[:12],
        us(p["best"]),
        f"[{us(p['lo'])}, {us(p['hi'])}]",
        p["n"],
        "accepted" if p["accepted"] else "REFUSED",
    ]


def render(rep: dict, fmt: str = "text") -> str:
    table = tables.render(HEADERS, [cells(p) for p in rep["points"]], fmt, ALIGN)
    if fmt == "csv":
        return table
    head = (
        f"{rep['case']} in {rep['folder']} ({rep['method']}; '>>' starts a new level; "
        f"examples {rep['examples']})"
    )
    foot = f"{len(rep['changepoints'])} changepoint(s) among the accepted runs"
    return "\n".join([tables.sentence(head, fmt), table, foot])


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


def arguments(p) -> None:
    """The `history` subcommand's arguments (cli.py registers the command)."""
    p.add_argument("case", help="a case id, e.g. up0/96/cuda-f32/resident")
    p.add_argument("--history", default="results", metavar="DIR", help="default: results")
    p.add_argument("--host", default=None, help="only this host (machine id or name)")
    p.add_argument(
        "--include-examples",
        action="store_true",
        help=f"also the committed example records ({EXAMPLES}/ under DIR, results/{EXAMPLES})",
    )
    tables.add_format(p, "every point, times in seconds", json_flag=True)


def run(args, th) -> int:
    rep = build(args.history, args.case, args.host, th, args.include_examples)
    fmt = tables.format_of(args)
    print(tables.dumps(rep) if fmt == "json" else render(rep, fmt))
    return 0
