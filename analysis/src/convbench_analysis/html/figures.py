"""The pages' figures as inline SVG text (matplotlib's SVG backend, text kept as text so a page
can be searched and read by a screen reader): a case's timeline with the host's and the GPU's
state on the rounds it touched, the ratios of a group with their intervals, a comparison's B/A
ratios; the sweep and history figures are the ones `plot` renders (plot.render), the fleet's the
ones `fleet --out` draws."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from .. import fleet, plot  # noqa: E402
from .. import plot_style as style  # noqa: E402
from .rounds import Lane  # noqa: E402

# Text as <text> (not glyph paths): searchable, and no glyph ids shared between the figures of
# one page. Figure ids stay salted per figure (svg.hashsalt unset), so they do not collide.
_RC = {"svg.fonttype": "none", "savefig.format": "svg"}
LANE_COLOURS = {
    "steal": "C1",
    "slow CPU": "C3",
    "foreign CPU": "C4",
    "power cap": "C2",
    "low clock": "C5",
    "foreign GPU": "C6",
}


def svg_text(fig, tight: bool = False) -> str:
    """The figure as an <svg> element (no XML declaration or doctype), closed after. tight: grown
    to hold what lies outside the figure (a title wider than one panel), as `plot` saves it."""
    buf = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format="svg", bbox_inches="tight" if tight else None)
    plt.close(fig)
    return _element(buf.getvalue())


def _element(text: str) -> str:
    start = text.find("<svg")
    if start < 0:
        raise ValueError("matplotlib wrote no <svg> element")
    return text[start:]


def timeline(case_id: str, rounds: list[int], seconds: list[float], lanes: list[Lane]) -> str:
    """Each round's time (top) over the lanes of host and GPU state (below): a marked round is
    shaded through both panels in its lane's colour."""
    per, unit = style.time_unit(seconds)
    n = max(1, len(lanes))
    with matplotlib.rc_context(_RC):
        fig, (top, low) = plt.subplots(
            2,
            1,
            figsize=(9, 2.6 + 0.28 * n),
            sharex=True,
            height_ratios=[3, max(0.8, 0.45 * n)],
            layout="constrained",
        )
        top.plot(rounds, [s * per for s in seconds], "o-", ms=3, lw=0.8, color="C0")
        top.set_ylabel(f"{unit} per call")
        top.set_title(f"{case_id}: each round's sample", fontsize=9)
        top.grid(True, alpha=0.3)
        for y, lane in enumerate(lanes):
            colour = LANE_COLOURS.get(lane.name, "C7")
            for r in lane.marks:
                top.axvspan(r - 0.4, r + 0.4, color=colour, alpha=0.15, lw=0)
            low.scatter(list(lane.marks), [y] * len(lane.marks), marker="s", color=colour, s=30)
        low.set_yticks(range(len(lanes)), [lane.name for lane in lanes], fontsize=8)
        low.set_ylim(-0.7, n - 0.3)
        low.set_xlabel("round")
        low.xaxis.set_major_locator(MaxNLocator(integer=True))
        if not lanes:
            low.set_yticks([])
            low.text(
                0.5,
                0.5,
                "no host or GPU probe in this record",
                ha="center",
                va="center",
                transform=low.transAxes,
                fontsize=8,
            )
        low.grid(True, axis="x", alpha=0.3)
        return svg_text(fig)


WIDE = 20.0  # ratios spread wider than this are drawn on a log axis


def intervals(labels: list[str], values: list, cis: list, band: float | None, title: str) -> str:
    """Ratios (log scale) with their intervals, one line each; 1 and the band 1 -+ band drawn.
    A ratio without a value is left out; one without an interval is a hollow point."""
    keep = [(lb, v, ci) for lb, v, ci in zip(labels, values, cis, strict=True) if v]
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(9, 0.9 + 0.32 * max(1, len(keep))), layout="constrained")
        for y, (_, v, ci) in enumerate(keep):
            if ci:
                ax.errorbar(
                    [v], [y], xerr=[[v - ci[0]], [ci[1] - v]], fmt="o", color="C0", capsize=3, ms=4
                )
            else:
                ax.plot([v], [y], "o", mfc="none", color="C0")
        ax.axvline(1.0, color="grey", lw=0.8)
        if band:
            ax.axvspan(1 - band, 1 + band, color="grey", alpha=0.15, lw=0)
        ax.set_yticks(range(len(keep)), [lb for lb, _, _ in keep], fontsize=8)
        ax.set_ylim(-0.7, len(keep) - 0.3)
        ax.invert_yaxis()
        ends = [x for _, v, ci in keep for x in (ci or [v])] + [1.0]
        if max(ends) / min(ends) > WIDE:  # over a decade and more: log, decades labelled
            ax.set_xscale("log")
            style.plain_log_ticks(ax)
        ax.set_title(title, fontsize=9)
        ax.grid(True, axis="x", which="both", alpha=0.3)
        return svg_text(fig)


SWEEP_KINDS = ("time", "ratio", "tflops")


def sweep(a, baseline: str | None) -> list[tuple[str, str]]:
    """(name, svg) of each figure `plot` renders of these runs (time, ratio and TFLOP/s vs
    frames; a kind with nothing to draw, e.g. TFLOP/s without counters, gives none)."""
    out = []
    with matplotlib.rc_context(_RC):
        for kind in SWEEP_KINDS:
            made = plot.render(kind, a, "svg", baseline)
            out += [(stem, _element(text)) for stem, text in made.items()]
    return out


def history(rep: dict, th) -> str:
    """The figure `plot --case` renders of a case's history."""
    with matplotlib.rc_context(_RC):
        ((_, text),) = plot.render("history", rep, "svg", th=th).items()
    return _element(text)


def fleet_figures(rep: dict) -> list[tuple[str, str]]:
    """(name, svg) of each per-host figure `fleet --out` draws."""
    with tempfile.TemporaryDirectory(prefix="convbench-html-") as tmp:
        with matplotlib.rc_context(_RC):
            paths = fleet.figures(rep, Path(tmp))
        return [(p.stem, _element(p.read_text())) for p in paths if p.suffix == ".svg"]
