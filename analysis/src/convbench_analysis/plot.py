"""`plot`: scaling sweep figures per model, PNG and SVG: time vs frames per arm (best, with the
rounds' spread above it as a bar), ratio vs frames against the baseline, and achieved TFLOP/s
per pipe vs its peak when counters exist; `plot --case` one case's history (plot_history.py).
Titled with host, GPU, model and lease verdict. Every figure follows plot_style: one colour per
arm, units on the axis, log axes only where values span decades, limits from accepted points,
refused points drawn with an x and their cause. `render` gives any figure as SVG text or PNG
bytes (an HTML report inlines them)."""

from __future__ import annotations

import math
import textwrap
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

from . import plot_style as style  # noqa: E402
from . import record  # noqa: E402
from .checks import seconds  # noqa: E402
from .findings import Assessment  # noqa: E402
from .pairs import pick_baseline  # noqa: E402
from .plot_history import history_figure, refusal_causes  # noqa: E402

MAX_COLUMNS = 4  # panels per row: a 7-stage sweep is two rows, not one strip 35 inches wide
# A counted path below this share of the case's nominal FLOP is bookkeeping (index arithmetic),
# not where the convolution ran: it is not drawn. A case whose counted paths hold less than
# COVERED of its nominal FLOP did its work on a pipe nobody counted: it is left out and said.
WORK_SHARE = 0.10
COVERED = 0.5


@dataclass(frozen=True)
class Point:
    frames: int
    best: float
    worst: float
    causes: tuple[str, ...]  # the codes refusing it; () when accepted
    achieved: dict | None
    flops: float | None

    @property
    def refused(self) -> bool:
        return bool(self.causes)


def _points(a: Assessment):
    """model -> label -> stage -> [Point], and model -> run summaries."""
    points = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    summaries = defaultdict(list)
    for i, run in enumerate(a.runs):
        s = record.summary(run)
        summaries[s["model"]].append(s)
        for c in run.cases:
            x = seconds(c)
            if not len(x):
                continue
            causes = tuple(sorted({f.code for f in a.for_case(i, c["id"])}))
            pt = Point(
                c["frames"], float(x.min()), float(x.max()), causes, record.achieved(c),
                c.get("flops"),
            )  # fmt: skip
            points[s["model"]][record.label(c)][c["stage"]].append(pt)
    return points, summaries


def _panels(names: list[str]):
    """A figure with one panel per name, at most MAX_COLUMNS to a row; constrained layout, so
    the title, panel titles, axis labels and the legend below never overlap."""
    cols = min(len(names), MAX_COLUMNS)
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.6 * cols, 3.6 * rows + 1.0), squeeze=False, layout="constrained"
    )
    for ax in axes.flat[len(names) :]:
        fig.delaxes(ax)
    return fig, list(axes.flat[: len(names)])


def _frames_axis(ax, frames: list[int]) -> None:
    """Frames on x, ticked at the sizes measured; log where they span decades."""
    fs = sorted(set(frames))
    if style.spans_decades(fs):
        ax.set_xscale("log")
    if len(fs) == 1:
        ax.set_xlim(fs[0] * 0.8, fs[0] * 1.25)
    ax.xaxis.set_major_locator(FixedLocator(fs))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(style.PLAIN)
    ax.set_xlabel("frames")


def _finish(fig, axes, title: str, notes: list[str] = ()):
    """One legend for the figure, naming every series that appears in any panel, under the
    panels; the title above them, with what was left out and why."""
    seen = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if not label.startswith("_"):
                seen.setdefault(label, handle)
    if seen:
        fig.legend(
            list(seen.values()),
            list(seen.keys()),
            loc="outside lower center",
            ncols=min(len(seen), 4),
            fontsize=8,
        )
    lines = [title] + [textwrap.shorten(n, 150, placeholder=" ...") for n in notes]
    fig.suptitle("\n".join(lines), fontsize=10)
    return fig


def _title(runs: list[dict], model: str, what: str) -> str:
    def join(key):
        return ", ".join(sorted({str(r[key]) for r in runs}))

    return f"{what}: {model}\nhost {join('host')} | GPU {join('gpu')} | lease {join('lease')}"


def _series(ax, label: str, frames: list, at: dict, bars: dict | None = None):
    """One arm's accepted points ({frames: y}) as a line in its style over the panel's frames,
    broken (NaN) where it has none: never bridged across a size refused or not measured.
    bars: {frames: height above the point}."""
    st = style.arm_style(label)
    ys = [at.get(f, math.nan) for f in frames]
    if bars is not None:
        up = [bars.get(f, 0.0) for f in frames]
        ax.errorbar(frames, ys, yerr=[[0.0] * len(ys), up], capsize=3, label=label, **st)
    else:
        ax.plot(frames, ys, label=label, **st)


def _draw_refused(ax, refused: list, value=lambda y: f"{y:.4g}") -> None:
    """Each (label, x, y, causes) as a refused point, named in the legend as the arm's refused
    points; value(y): how its value reads."""
    for label, x, y, causes in refused:
        color = style.arm_color(label)
        style.draw_refused(ax, x, y, color, list(causes), value(y), f"{label} (refused)")


def _frames_of(arms, stage: str) -> list[int]:
    return sorted({p.frames for per in arms.values() for p in per.get(stage, [])})


def _stages(arms) -> list[str]:
    return sorted({st for per in arms.values() for st in per})


def time_figure(model, arms, summaries):
    stages = _stages(arms)
    every = [p for per in arms.values() for pts in per.values() for p in pts]
    accepted_best = [p.best for p in every if not p.refused]
    scale, unit = style.time_unit(accepted_best or [p.best for p in every])
    fig, axes = _panels(stages)
    for ax, st in zip(axes, stages, strict=True):
        accepted, refused, frames = [], [], _frames_of(arms, st)
        for lb, per in sorted(arms.items()):
            pts = per.get(st, [])
            ok = [p for p in pts if not p.refused]
            if ok:
                at = {p.frames: p.best * scale for p in ok}
                bars = {p.frames: (p.worst - p.best) * scale for p in ok}
                _series(ax, lb, frames, at, bars)
                accepted += [at[f] + bars[f] for f in at] + list(at.values())
            refused += [(lb, p.frames, p.best * scale, p.causes) for p in pts if p.refused]
        _frames_axis(ax, frames)
        style.set_value_axis(ax, accepted, [r[2] for r in refused])
        _draw_refused(ax, refused, lambda y: style.human_time(y / scale))
        ax.set_ylabel(f"best time per call ({unit})")
        ax.set_title(st if accepted else f"{st} (nothing accepted)")
        ax.grid(True, which="both", alpha=0.3)
    what = "time vs frames (bars: up to the slowest round; x: refused)"
    return _finish(fig, axes, _title(summaries, model, what))


def ratio_figure(model, arms, summaries, base):
    stages = _stages(arms)
    fig, axes = _panels(stages)
    for ax, st in zip(axes, stages, strict=True):
        bpts = {p.frames: p for p in arms[base].get(st, [])}
        accepted, refused, frames = [1.0], [], _frames_of(arms, st)
        for lb, per in sorted(arms.items()):
            if lb == base:
                continue
            pts = [
                (p.frames, p.best / bpts[p.frames].best, p.causes + bpts[p.frames].causes)
                for p in sorted(per.get(st, []), key=lambda p: p.frames)
                if p.frames in bpts
            ]
            at = {f: r for f, r, causes in pts if not causes}
            if at:
                _series(ax, lb, frames, at)
                accepted += list(at.values())
            refused += [(lb, f, r, causes) for f, r, causes in pts if causes]
        _frames_axis(ax, frames)
        style.set_value_axis(ax, accepted, [r[2] for r in refused])
        _draw_refused(ax, refused)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_ylabel(f"time / time of {base}")
        ax.set_title(st)
        ax.grid(True, which="both", alpha=0.3)
    what = f"ratio vs frames (baseline {base}; x: refused, a ratio refused with either case)"
    return _finish(fig, axes, _title(summaries, model, what))


# ---- achieved TFLOP/s, one panel per pipe and stage ----------------------------------------


def _worked(p: Point) -> list[dict]:
    """The counted paths that did the case's work (at least WORK_SHARE of its FLOP)."""
    paths = [w for w in (p.achieved or {}).get("paths", []) if w["flop"] and w["tflops"]]
    total = p.flops if p.flops and p.flops > 0 else sum(w["flop"] for w in paths)
    return [w for w in paths if w["flop"] >= WORK_SHARE * total]


def _left_out(p: Point) -> str | None:
    """Why a case has no TFLOP/s drawn, or None when it has."""
    ach = p.achieved
    if ach is None:
        return "no counters"
    if ach.get("status") != "collected":
        return "counters unavailable"
    counted = sum(w["flop"] for w in ach.get("paths", []) if w["flop"])
    if p.flops and counted < COVERED * p.flops:
        uncounted = ", ".join(n["name"] for n in ach.get("not_counted", [])) or "a pipe"
        return f"under {COVERED:.0%} of its FLOP counted, {uncounted} not counted"
    return None


def _by_pipe(arms):
    """(pipe, stage) -> label -> [(frames, path, point)], and why -> the cases left out for it
    (label, stage, frames)."""
    drawn = defaultdict(lambda: defaultdict(list))
    notes = defaultdict(list)
    for lb, per in sorted(arms.items()):
        for st, pts in sorted(per.items()):
            for p in sorted(pts, key=lambda p: p.frames):
                why = _left_out(p)
                if why:
                    notes[why].append((lb, st, p.frames))
                    continue
                for w in _worked(p):
                    drawn[(w["name"], st)][lb].append((p.frames, w, p))
    return drawn, notes


def _notes(notes: dict) -> list[str]:
    said = []
    for why, where in sorted(notes.items()):
        cases = ", ".join(f"{lb} {st}/{f}" for lb, st, f in where[:3])
        more = f" and {len(where) - 3} more" if len(where) > 3 else ""
        said.append(f"not drawn ({why}): {cases}{more}")
    said.append(f"paths under {WORK_SHARE:.0%} of a case's FLOP not drawn")
    return said


def _tflops_panel(ax, series: dict, frames: list[int]) -> None:
    accepted, refused, peak, name = [], [], None, ""
    for lb, pts in sorted(series.items()):
        at = {f: (w, p) for f, w, p in pts}
        ys = [at[f][0]["tflops"] if f in at and not at[f][1].refused else math.nan for f in frames]
        name = pts[0][1]["name"]
        st = style.arm_style(lb)
        if any(not math.isnan(y) for y in ys):
            ax.plot(frames, ys, label=f"{lb} ({name})", **st)
            accepted += [y for y in ys if not math.isnan(y)]
        refused += [(lb, f, w["tflops"], p.causes) for f, w, p in pts if p.refused]
        peak = max([peak or 0.0] + [w["peak_tflops"] or 0.0 for _, w, _ in pts]) or peak
    if peak:
        ax.axhline(peak, ls="--", color="k" if "fp64" in name else "grey", lw=0.8)
        ax.annotate(
            f"{name} peak {peak:.3g}", (0.02, peak), xycoords=("axes fraction", "data"), fontsize=7
        )
    style.set_value_axis(ax, accepted + ([peak] if peak else []), [r[2] for r in refused], True)
    _draw_refused(ax, refused, lambda y: f"{y:.3g} TFLOP/s")


def tflops_figure(model, arms, summaries):
    """Achieved TFLOP/s, a panel per pipe (SIMT fp64 / fp32, fp64 DMMA, tf32 / bf16 / fp16
    tensor) and stage, grouped by pipe, each path's peak a dashed line; a case with no counted
    work is left out and said in the title, never drawn at 0. None when no case has any."""
    drawn, notes = _by_pipe(arms)
    if not drawn:
        return None
    order = {"simt": 0, "dmma": 1, "tensor": 2}
    keys = sorted(
        drawn,
        key=lambda k: (order.get(next(iter(drawn[k].values()))[0][1]["pipe"], 3), k[0], k[1]),
    )
    fig, axes = _panels([f"{st} | {pipe}" for pipe, st in keys])
    for ax, key in zip(axes, keys, strict=True):
        # every size the stage measured: a size left out breaks the line instead of bridging it
        frames = sorted({p.frames for per in arms.values() for p in per.get(key[1], [])})
        _tflops_panel(ax, drawn[key], frames)
        _frames_axis(ax, frames)
        ax.set_ylabel("achieved TFLOP/s (counters)")
        ax.set_title(f"{key[1]} | {key[0]}")
        ax.grid(True, which="both", alpha=0.3)
    what = "achieved TFLOP/s by pipe vs its peak"
    return _finish(fig, axes, _title(summaries, model, what), _notes(notes))


# ---- the figures, the files, the exit ----------------------------------------------------

KINDS = ("time", "ratio", "tflops", "history")


def _stem(model) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(model))


def figures(a: Assessment, baseline: str | None = None, kinds=KINDS):
    """(file stem, figure) for every figure of every model, not yet saved."""
    points, summaries = _points(a)
    for model, arms in points.items():
        stem = _stem(model)
        if "time" in kinds:
            yield f"{stem}-time", time_figure(model, arms, summaries[model])
        base = pick_baseline(list(arms), baseline)
        if base and "ratio" in kinds:
            yield f"{stem}-ratio", ratio_figure(model, arms, summaries[model], base)
        fig = tflops_figure(model, arms, summaries[model]) if "tflops" in kinds else None
        if fig is not None:
            yield f"{stem}-tflops", fig


def render(kind: str, source, fmt: str = "svg", baseline: str | None = None, th=None) -> dict:
    """File stem -> the figure as SVG text (fmt 'svg') or PNG bytes ('png'). kind: 'time',
    'ratio' or 'tflops' with an Assessment (one figure per model), or 'history' with the
    report of history_view.build."""
    if kind not in KINDS:
        raise ValueError(f"figure kind {kind!r}: one of {', '.join(KINDS)}")
    if kind == "history":
        made = [(source["case"].replace("/", "-") + "-history", history_figure(source, th))]
    else:
        made = list(figures(source, baseline, (kind,)))
    out = {}
    for stem, fig in made:
        try:
            out[stem] = style.encode(fig, fmt)
        finally:
            plt.close(fig)
    return out


def _write(made, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, fig in made:
        try:
            for fmt in style.FORMATS:
                path = out / f"{stem}.{fmt}"
                style.write_atomically(path, style.encode(fig, fmt))
                written.append(path)
        finally:
            plt.close(fig)
    return written


def plot(a: Assessment, out: Path, baseline: str | None = None) -> list[Path]:
    return _write(figures(a, baseline), out)


def plot_history(rep: dict, out: Path, th=None) -> list[Path]:
    return _write([(rep["case"].replace("/", "-") + "-history", history_figure(rep, th))], out)


def _refused_line(refused: list[tuple[str, ...]], total: int) -> str | None:
    """One line saying what was refused and why; None when nothing was."""
    if not refused:
        return None
    codes = ", ".join(sorted({c for causes in refused for c in causes})) or "cause not recorded"
    if len(refused) == total:
        return f"plot: nothing accepted: all {total} point(s) refused ({codes}); drawn as x"
    return f"plot: {len(refused)} of {total} point(s) refused ({codes}); drawn as x"


def refused_line(a: Assessment) -> str | None:
    """For `plot FILES`: the sweep's cases, as `report` judges them."""
    points, _ = _points(a)
    every = [
        p for arms in points.values() for per in arms.values() for pts in per.values() for p in pts
    ]
    return _refused_line([p.causes for p in every if p.refused], len(every))


def history_refused_line(rep: dict, th=None) -> str | None:
    """For `plot --case`: the case's runs, as the history index judged them."""
    from .thresholds import Thresholds

    refused = [
        tuple(refusal_causes(p["path"], rep["case"], th or Thresholds()))
        for p in rep["points"]
        if not p["accepted"]
    ]
    return _refused_line(refused, len(rep["points"]))
