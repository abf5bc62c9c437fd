"""The history figure (`plot --case CASE_ID`): one case over time, from history_view.build.
Time runs on a date axis (ticks at whatever spacing the span needs, none repeated); each run's
best time is a point in the unit that suits the accepted runs, with its median's interval as a
bar; the levels between changepoints are lines with the step between them in percent. The
y limits come from the accepted runs: a refused run far off (a run under a profiler) is drawn at
the edge with an arrow, its value and its cause, and squashes nothing."""

from __future__ import annotations

import numpy as np
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.lines import Line2D

from . import plot_style as style
from .checks import case_findings, lease_findings
from .load import InputError, load_run
from .record import parse_utc
from .thresholds import Thresholds


def refusal_causes(path: str, case_id: str, th: Thresholds) -> list[str]:
    """The codes of the findings that refuse the case in its own run (the run's lease and the
    case's own checks, as the history index judged it); [] when the record cannot be read."""
    try:
        run = load_run(path)
    except InputError:
        return []
    case = next((c for c in run.cases if c["id"] == case_id), None)
    found = lease_findings(run, th) + (case_findings(run, case, th) if case else [])
    return sorted({f.code for f in found if f.refuses})


def _series_label(case_id: str) -> str:
    parts = case_id.split("/")
    return "/".join(parts[2:4]) if len(parts) >= 4 else case_id


def _levels(ax, ok: list[dict], when: dict, scale: float, color: str) -> list[str]:
    """A line at each level's median best; at each changepoint the step in percent."""
    starts = [0] + [i for i, p in enumerate(ok) if p["changepoint"] and i > 0] + [len(ok)]
    steps, before = [], None
    for a, b in zip(starts, starts[1:], strict=False):
        seg = ok[a:b]
        level = float(np.median([p["best"] for p in seg])) * scale
        xs = [when[id(seg[0])], when[id(seg[-1])]]
        ax.plot(xs, [level, level], color=color, lw=3, alpha=0.25, solid_capstyle="round")
        if before is not None:
            pct = 100.0 * (level / before - 1.0)
            steps.append(f"{pct:+.1f}%")
            ax.annotate(
                f"step {pct:+.1f}%",
                (when[id(seg[0])], level),
                textcoords="offset points",
                xytext=(6, 8 if pct > 0 else -12),
                fontsize=8,
                color="C3",
            )
            ax.axvline(when[id(seg[0])], color="C3", ls="--", lw=1)
        before = level
    return steps


def history_figure(rep: dict, th: Thresholds | None = None):
    import matplotlib.pyplot as plt

    th = th or Thresholds()
    pts = rep["points"]
    when = {id(p): parse_utc(p["started_utc"]) for p in pts}
    ok = [p for p in pts if p["accepted"]]
    refused = [p for p in pts if not p["accepted"]]
    scale, unit = style.time_unit([p["best"] for p in ok] or [p["best"] for p in refused])
    label = _series_label(rep["case"])
    st = style.arm_style(label)
    fig, ax = plt.subplots(figsize=(9, 4.4), layout="constrained")
    if ok:
        ax.errorbar(
            [when[id(p)] for p in ok],
            [p["best"] * scale for p in ok],
            yerr=[
                [max(0.0, p["best"] - p["lo"]) * scale for p in ok],
                [max(0.0, p["hi"] - p["best"]) * scale for p in ok],
            ],
            color=st["color"],
            marker=st["marker"],
            ls="none",
            capsize=3,
        )
    accepted_values = [v * scale for p in ok for v in (p["best"], p["lo"], p["hi"])]
    style.set_value_axis(ax, accepted_values, [p["best"] * scale for p in refused])
    steps = _levels(ax, ok, when, scale, st["color"]) if ok else []
    for p in refused:
        causes = refusal_causes(p["path"], rep["case"], th)
        value = style.human_time(p["best"])
        style.draw_refused(ax, when[id(p)], p["best"] * scale, st["color"], causes, value)
    _time_axis(ax, list(when.values()))
    ax.set_ylabel(f"best time per call ({unit})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(handles=_legend(st, bool(refused), bool(steps)), fontsize=7, loc="best")
    said = f"{len(ok)} accepted, {len(refused)} refused run(s)"
    if steps:
        said += "; steps " + ", ".join(steps)
    ax.set_title(f"{rep['case']} over time ({said})", fontsize=10)
    return fig


def _time_axis(ax, times: list) -> None:
    locator = AutoDateLocator(minticks=3, maxticks=8)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    lo, hi = min(times), max(times)
    pad = (hi - lo) * 0.06 if hi > lo else None
    if pad is not None:
        ax.set_xlim(lo - pad, hi + pad)
    ax.set_xlabel("run started (UTC)")


def _legend(st: dict, refused: bool, steps: bool) -> list:
    color = st["color"]
    out = [
        Line2D([], [], color=color, marker=st["marker"], ls="none", label="accepted: best"),
        Line2D([], [], color=color, marker="|", ms=12, ls="none", label="median's 95% interval"),
        Line2D([], [], color=color, lw=3, alpha=0.25, label="level (median of its runs)"),
    ]
    if refused:
        m = style.REFUSED_MARKER
        out.append(Line2D([], [], color=color, marker=m, mew=2, ls="none", label="refused run"))
    if steps:
        out.append(Line2D([], [], color="C3", ls="--", label="changepoint"))
    return out
