"""`plot`: scaling sweep figures per model, PNG and SVG: time vs frames per arm (log-log, best
with the rounds' min..max as error bars), ratio vs frames against the baseline, and achieved
TFLOP/s vs peak when counters exist. Titled with host, GPU, model and lease verdict. Cases a gate
refused are drawn hollow so a figure never passes off a refused number as a clean one."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import record  # noqa: E402
from .gates import Assessment, seconds  # noqa: E402
from .report import pick_baseline  # noqa: E402


def _color(label, arms) -> str:
    """One colour per arm across every panel of a figure (panels hold different subsets)."""
    return f"C{sorted(arms).index(label) % 10}"


def _legend(fig, axes) -> None:
    """One legend for the figure, naming every arm that appears in any panel."""
    seen = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    if seen:
        fig.legend(list(seen.values()), list(seen.keys()), loc="upper left", fontsize=7)


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


def plot(a: Assessment, out: Path, baseline: str | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    # model -> label -> stage -> list of (frames, best, lo, hi, refused, achieved)
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
    written = []
    for model, arms in points.items():
        stem = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(model))
        stages = sorted({st for per in arms.values() for st in per})
        fig, axes = plt.subplots(1, len(stages), figsize=(5 * len(stages), 4.2), squeeze=False)
        for ax, st in zip(axes[0], stages, strict=True):
            for lb, per in sorted(arms.items()):
                pts = sorted(per.get(st, []))
                if not pts:
                    continue
                fr = [p[0] for p in pts]
                best = [p[1] for p in pts]
                err = [[0.0 for _ in pts], [p[3] - p[1] for p in pts]]
                line = ax.errorbar(
                    fr, best, yerr=err, marker="o", capsize=3, label=lb, color=_color(lb, arms)
                )
                hollow = [p for p in pts if p[4]]
                if hollow:
                    ax.scatter(
                        [p[0] for p in hollow],
                        [p[1] for p in hollow],
                        s=90,
                        facecolors="white",
                        edgecolors=line[0].get_color(),
                        zorder=3,
                    )
            ax.set(
                xscale="log",
                yscale="log",
                xlabel="frames",
                ylabel="seconds per call (best)",
                title=st,
            )
            ax.grid(True, which="both", alpha=0.3)
        _legend(fig, axes)
        fig.suptitle(
            _title(
                summaries[model], model, "time vs frames (bars: rounds' spread; hollow: refused)"
            ),
            fontsize=9,
        )
        written += _save(fig, out, f"{stem}-time")

        base = pick_baseline(list(arms), baseline)
        if base:
            fig, axes = plt.subplots(1, len(stages), figsize=(5 * len(stages), 4.2), squeeze=False)
            for ax, st in zip(axes[0], stages, strict=True):
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
                    if hollow:
                        ax.scatter(
                            [p[0] for p in hollow],
                            [p[1] for p in hollow],
                            s=90,
                            facecolors="white",
                            edgecolors=line.get_color(),
                            zorder=3,
                        )
                ax.axhline(1.0, color="grey", lw=0.8)
                ax.set(
                    xscale="log",
                    yscale="log",
                    xlabel="frames",
                    ylabel=f"time / time of {base}",
                    title=st,
                )
                ax.grid(True, which="both", alpha=0.3)
            _legend(fig, axes)
            fig.suptitle(
                _title(summaries[model], model, f"ratio vs frames (baseline {base})"), fontsize=9
            )
            written += _save(fig, out, f"{stem}-ratio")

        have_ctr = any(
            p[5] and any(k in p[5] for k in ("fp64", "fp32"))
            for per in arms.values()
            for pts in per.values()
            for p in pts
        )
        if have_ctr:
            fig, axes = plt.subplots(1, len(stages), figsize=(5 * len(stages), 4.2), squeeze=False)
            for ax, st in zip(axes[0], stages, strict=True):
                peaks = {}
                for lb, per in sorted(arms.items()):
                    for prec in ("fp64", "fp32"):
                        pts = [
                            (p[0], p[5][prec])
                            for p in sorted(per.get(st, []))
                            if p[5] and prec in p[5]
                        ]
                        if not pts:
                            continue
                        ax.plot(
                            [p[0] for p in pts],
                            [p[1]["tflops"] for p in pts],
                            marker="o",
                            label=f"{lb} ({prec})",
                            color=_color(lb, arms),
                            ls="-" if prec == "fp64" else ":",
                        )
                        pk = [p[1]["peak_tflops"] for p in pts if p[1]["peak_tflops"]]
                        if pk:
                            peaks[prec] = max(pk)
                for prec, pk in peaks.items():
                    ax.axhline(pk, ls="--", color="k" if prec == "fp64" else "grey", lw=0.8)
                    ax.annotate(
                        f"{prec} peak {pk:.3g}",
                        (0.02, pk),
                        xycoords=("axes fraction", "data"),
                        fontsize=7,
                    )
                ax.set(
                    xscale="log", xlabel="frames", ylabel="achieved TFLOP/s (counters)", title=st
                )
                ax.grid(True, which="both", alpha=0.3)
            _legend(fig, axes)
            fig.suptitle(_title(summaries[model], model, "achieved TFLOP/s vs peak"), fontsize=9)
            written += _save(fig, out, f"{stem}-tflops")
    return written
