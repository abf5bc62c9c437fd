"""`plot`: scaling sweep figures per model, PNG and SVG: time vs frames per arm (log-log, best
with the rounds' min..max as error bars), ratio vs frames against the baseline, and achieved
TFLOP/s vs peak when counters exist. Titled with host, GPU, model and lease verdict. Cases a gate
refused are drawn hollow so a figure never passes off a refused number as a clean one."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from . import record  # noqa: E402
from .checks import seconds  # noqa: E402
from .findings import Assessment  # noqa: E402
from .pairs import pick_baseline  # noqa: E402


def _color(label, arms) -> str:
    """One colour per arm across every panel of a figure (panels hold different subsets)."""
    return f"C{sorted(arms).index(label) % 10}"


MAX_COLUMNS = 4  # panels per row: a 7-stage sweep is two rows, not one strip 35 inches wide


def _panels(stages: list[str]):
    """A figure with one panel per stage, at most MAX_COLUMNS to a row; constrained layout, so
    the title, panel titles, axis labels and the legend below never overlap."""
    cols = min(len(stages), MAX_COLUMNS)
    rows = -(-len(stages) // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.6 * cols, 3.6 * rows + 1.0), squeeze=False, layout="constrained"
    )
    for ax in axes.flat[len(stages) :]:
        fig.delaxes(ax)
    return fig, list(axes.flat[: len(stages)])


def _minor_label(v: float) -> str:
    """Minor ticks of a log axis: label only the 2s, 3s and 5s of a decade, plainly."""
    mantissa = v / 10 ** math.floor(math.log10(v) + 1e-9) if v > 0 else 0
    return (
        f"{v:g}" if round(mantissa) in (2, 3, 5) and abs(mantissa - round(mantissa)) < 1e-6 else ""
    )


_PLAIN = FuncFormatter(lambda v, _: f"{v:g}")  # 0.3, 2, 1000; not 3x10^-1
_PLAIN_MINOR = FuncFormatter(lambda v, _: _minor_label(v))
_NONE = FuncFormatter(lambda v, _: "")


def _plain_log_ticks(ax) -> None:
    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_formatter(_PLAIN)
            axis.set_minor_formatter(_PLAIN_MINOR if axis is ax.yaxis else _NONE)


def _finish(fig, axes, title: str):
    """One legend for the figure, naming every arm that appears in any panel, under the panels;
    the title above them."""
    seen = {}
    for ax in axes:
        _plain_log_ticks(ax)
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    if seen:
        fig.legend(
            list(seen.values()),
            list(seen.keys()),
            loc="outside lower center",
            ncols=min(len(seen), 4),
            fontsize=8,
        )
    fig.suptitle(title, fontsize=10)
    return fig


def _title(runs: list[dict], model: str, what: str) -> str:
    def join(key):
        return ", ".join(sorted({str(r[key]) for r in runs}))

    return f"{what}: {model}\nhost {join('host')} | GPU {join('gpu')} | lease {join('lease')}"


def _save(fig, out: Path, stem: str) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        p = out / f"{stem}.{ext}"
        fig.savefig(p, dpi=120, bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths


def _points(a: Assessment):
    """model -> label -> stage -> [(frames, best, lo, hi, refused, achieved)], and model ->
    run summaries."""
    points = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    summaries = defaultdict(list)
    for i, run in enumerate(a.runs):
        s = record.summary(run)
        summaries[s["model"]].append(s)
        for c in run.cases:
            x = seconds(c)
            if not len(x):
                continue
            points[s["model"]][record.label(c)][c["stage"]].append(
                (
                    c["frames"],
                    float(x.min()),
                    float(x.min()),
                    float(x.max()),
                    bool(a.for_case(i, c["id"])),
                    record.achieved(c),
                )
            )
    return points, summaries


def _hollow(ax, xs, ys, color) -> None:
    if xs:
        ax.scatter(xs, ys, s=90, facecolors="white", edgecolors=color, zorder=3)


def time_figure(model, arms, summaries):
    stages = sorted({st for per in arms.values() for st in per})
    fig, axes = _panels(stages)
    for ax, st in zip(axes, stages, strict=True):
        for lb, per in sorted(arms.items()):
            pts = sorted(per.get(st, []))
            if not pts:
                continue
            err = [[0.0 for _ in pts], [(p[3] - p[1]) * 1e6 for p in pts]]
            line = ax.errorbar(
                [p[0] for p in pts],
                [p[1] * 1e6 for p in pts],
                yerr=err,
                marker="o",
                capsize=3,
                label=lb,
                color=_color(lb, arms),
            )
            hollow = [p for p in pts if p[4]]
            _hollow(ax, [p[0] for p in hollow], [p[1] * 1e6 for p in hollow], line[0].get_color())
        ax.set(xscale="log", yscale="log", xlabel="frames", ylabel="us per call (best)")
        ax.set_title(st)
        ax.grid(True, which="both", alpha=0.3)
    what = "time vs frames (bars: rounds' spread; hollow: refused)"
    return _finish(fig, axes, _title(summaries, model, what))


def ratio_figure(model, arms, summaries, base):
    stages = sorted({st for per in arms.values() for st in per})
    fig, axes = _panels(stages)
    for ax, st in zip(axes, stages, strict=True):
        bpts = {p[0]: p for p in arms[base].get(st, [])}
        for lb, per in sorted(arms.items()):
            if lb == base:
                continue
            pts = [
                (p[0], p[1] / bpts[p[0]][1], p[4] or bpts[p[0]][4])
                for p in sorted(per.get(st, []))
                if p[0] in bpts
            ]
            if not pts:
                continue
            (line,) = ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                marker="o",
                label=lb,
                color=_color(lb, arms),
            )
            hollow = [p for p in pts if p[2]]
            _hollow(ax, [p[0] for p in hollow], [p[1] for p in hollow], line.get_color())
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set(xscale="log", yscale="log", xlabel="frames", ylabel=f"time / time of {base}")
        ax.set_title(st)
        ax.grid(True, which="both", alpha=0.3)
    what = f"ratio vs frames (baseline {base}; hollow: refused)"
    return _finish(fig, axes, _title(summaries, model, what))


def _worked(achieved: dict | None) -> list[dict]:
    """The paths of a case's counters that counted work (record.achieved)."""
    return [p for p in (achieved or {}).get("paths", []) if p["flop"] and p["tflops"] is not None]


def tflops_figure(model, arms, summaries):
    """Achieved TFLOP/s by pipe (SIMT fp64 / fp32, fp64 DMMA, tf32 / bf16 / fp16 tensor) per arm,
    each path's peak a dashed line; None when no case has FLOP counters."""
    if not any(_worked(p[5]) for per in arms.values() for pts in per.values() for p in pts):
        return None
    stages = sorted({st for per in arms.values() for st in per})
    fig, axes = _panels(stages)
    for ax, st in zip(axes, stages, strict=True):
        peaks = {}
        for lb, per in sorted(arms.items()):
            names = sorted({w["name"] for p in per.get(st, []) for w in _worked(p[5])})
            for name in names:
                pts = [
                    (p[0], w)
                    for p in sorted(per.get(st, []))
                    for w in _worked(p[5])
                    if w["name"] == name
                ]
                tensor = pts[0][1]["pipe"] == "tensor"
                ax.plot(
                    [p[0] for p in pts],
                    [p[1]["tflops"] for p in pts],
                    marker="o",
                    label=f"{lb} ({name})",
                    color=_color(lb, arms),
                    ls="-" if tensor else ":",
                )
                pk = [p[1]["peak_tflops"] for p in pts if p[1]["peak_tflops"]]
                if pk:
                    peaks[name] = max(pk)
        for name, pk in peaks.items():
            ax.axhline(pk, ls="--", color="k" if "fp64" in name else "grey", lw=0.8)
            ax.annotate(
                f"{name} peak {pk:.3g}", (0.02, pk), xycoords=("axes fraction", "data"), fontsize=7
            )
        ax.set(xscale="log", xlabel="frames", ylabel="achieved TFLOP/s by pipe (counters)")
        ax.set_title(st)
        ax.grid(True, which="both", alpha=0.3)
    return _finish(fig, axes, _title(summaries, model, "achieved TFLOP/s by pipe vs its peak"))


def figures(a: Assessment, baseline: str | None = None):
    """(file stem, figure) for every figure of every model, not yet saved."""
    points, summaries = _points(a)
    for model, arms in points.items():
        stem = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(model))
        yield f"{stem}-time", time_figure(model, arms, summaries[model])
        base = pick_baseline(list(arms), baseline)
        if base:
            yield f"{stem}-ratio", ratio_figure(model, arms, summaries[model], base)
        fig = tflops_figure(model, arms, summaries[model])
        if fig is not None:
            yield f"{stem}-tflops", fig


def plot(a: Assessment, out: Path, baseline: str | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, fig in figures(a, baseline):
        written += _save(fig, out, stem)
    return written
