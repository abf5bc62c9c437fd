"""Properties of the figures themselves (the matplotlib objects, not pixels): what a reader could
be misled by. Each test names the planted fault it was seen failing on (then reverted)."""

from __future__ import annotations

import copy
import json
import math
import os

import faults
import matplotlib.pyplot as plt
import numpy as np
import pytest
import synth
from conftest import EXAMPLES
from helpers import cli as _cli
from matplotlib.container import ErrorbarContainer
from matplotlib.dates import ConciseDateFormatter

from convbench_analysis import assess, history_view, load, plot, plot_style
from convbench_analysis.checks import seconds
from convbench_analysis.thresholds import Thresholds

HOST = "up0/96/cpu-f64/host"
SWEEP = next(p for p in EXAMPLES if p.name == "sweep.json")


def _figures(write, *runs, kinds=plot.KINDS):
    a = assess.assess([load.load_run(write(r)) for r in runs])
    return dict(plot.figures(a, kinds=kinds))


def _series_lines(ax) -> list[tuple[str, object]]:
    """(label, data line) of every named series: plain lines and errorbars' data lines."""
    out = [(ln.get_label(), ln) for ln in ax.get_lines() if not ln.get_label().startswith("_")]
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer) and c.lines[0] is not None:
            out.append((c.get_label(), c.lines[0]))
    return out


def _edge_mark(ax, y):
    """The one mark drawn at height y, told apart from the accepted points: a marker no series
    uses, or hollow."""
    marks = [ln for ln in ax.get_lines() if len(ln.get_ydata()) == 1 and ln.get_ydata()[0] == y]
    assert len(marks) == 1, [m.get_label() for m in marks]
    series = {
        ln.get_marker() for ln in ax.get_lines() if len(ln.get_ydata()) > 1 or ln is not marks[0]
    }
    mark = marks[0]
    assert mark.get_marker() not in series or mark.get_markerfacecolor() == "none"
    return mark


# ---- log axes only where values span decades ------------------------------------------------


def test_time_axis_is_log_across_decades_and_linear_within_one(write):
    """Host arms (ms) beside device arms (µs): log; the device arms alone (within a factor of
    a few): linear, in µs. Planted: set_value_axis never choosing log failed the first assert;
    one always choosing log failed the second."""
    wide = synth.make_run(arms=("cpu-f64", "cuda-f32"), frames=(96,), reps=3)
    narrow = synth.make_run(arms=("cuda-f64", "cuda-f32"), frames=(96,), reps=3)
    for ax in _figures(write, wide, kinds=("time",))[f"{synth.MODEL}-time"].axes:
        assert ax.get_yscale() == "log", ax.get_title()
    for ax in _figures(write, narrow, kinds=("time",))[f"{synth.MODEL}-time"].axes:
        lo, hi = ax.get_ylim()
        assert ax.get_yscale() == "linear" and hi / lo < plot_style.DECADE
        assert "(µs)" in ax.get_ylabel()
    plt.close("all")


def test_the_unit_suits_the_values():
    """The median of the values reads between 1 and 1000 of the chosen unit. Planted: a unit
    table without ms failed (76 ms read as 76500 µs)."""
    for v in (3e-9, 4.2e-7, 1.2e-4, 0.0765, 0.71, 12.0):
        scale, unit = plot_style.time_unit([v, v * 1.2, v * 0.9])
        assert 1.0 <= v * scale < 1000.0, (v, unit)


# ---- refused points: drawn, with their cause, without rescaling the accepted ones -----------


def _history(tmp_path, bests, refused_at=None, refused_best=0.71, every_s=3600.0):
    """One run every_s apart per best; the run at refused_at under a lapsed lease, far off."""
    for i, best in enumerate(bests):
        start = 1_795_000_000.0 + every_s * i
        run = synth.make_run(seed=10 + i, start=start, token=str(40 + i))
        value = refused_best if i == refused_at else best
        synth.set_seconds(synth.case(run, HOST), [value * f for f in (1.0, 1.01, 1.004, 1.006)])
        if i == refused_at:
            faults.lapsed_lease(run)
        (tmp_path / f"r{i}.json").write_text(json.dumps(run))
    return history_view.build(tmp_path, HOST, None, Thresholds())


def test_a_refused_outlier_does_not_squash_the_accepted_runs(tmp_path):
    """A 0.71 s refused run among 76-108 ms accepted ones (a 41% step): the y limits hold the
    accepted runs and not the outlier, the accepted runs fill most of the axis, the outlier is an
    mark of its own on the top edge with its cause, and the step is said in percent. Planted:
    limits from every point (accepted and refused) failed; the refused mark drawn with the
    accepted points' own marker (a filled diamond, host staging) failed."""
    rep = _history(tmp_path, [0.0765, 0.0770, 0.0768, 0.108, 0.1083, 0.1079], refused_at=1)
    fig = plot.history_figure(rep, Thresholds())
    (ax,) = fig.axes
    lo, hi = ax.get_ylim()
    scale, unit = plot_style.time_unit([0.0765])
    ok = [p for p in rep["points"] if p["accepted"]]
    assert hi < 0.71 * scale and lo < min(p["best"] for p in ok) * scale
    assert max(p["hi"] for p in ok) * scale <= hi
    span = (max(p["best"] for p in ok) - min(p["best"] for p in ok)) * scale
    assert span / (hi - lo) > 0.5, "the accepted runs squashed into a sliver of the axis"
    _edge_mark(ax, hi)
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("refused: lease-expired") and "710 ms" in t for t in texts), texts
    assert any(t.startswith("step +4") for t in texts), texts
    assert f"({unit})" in ax.get_ylabel() and unit == "ms"
    plt.close(fig)


def test_a_refused_case_in_a_sweep_keeps_the_accepted_limits(write):
    """One host case 1000x slower and refused (a CPU hog): the time panel's limits come from
    the accepted cases, the refused one a mark of its own at the edge naming foreign-cpu.
    Planted: limits from every point failed; the refused mark drawn with the accepted
    points' own marker failed."""
    run = synth.make_run(arms=("cpu-f64", "cpu-f32"), frames=(96, 384), reps=3, stages=("up0",))
    c = synth.case(run, "up0/384/cpu-f32/host")
    synth.set_seconds(c, [s * 1000 for s in seconds(c)])
    faults.cpu_hog(run, c["id"], rounds=(0, 1, 2))
    fig = _figures(write, run, kinds=("time",))[f"{synth.MODEL}-time"]
    (ax,) = fig.axes
    lo, hi = ax.get_ylim()
    scale, unit = plot_style.time_unit([seconds(d).min() for d in run["cases"] if d is not c])
    assert f"({unit})" in ax.get_ylabel() and hi < min(seconds(c)) * scale
    _edge_mark(ax, hi)
    assert any("refused: foreign-cpu" in t.get_text() for t in ax.texts)
    assert ax.get_yscale() == "linear"  # the accepted values span no decade
    plt.close(fig)


def test_a_line_is_not_bridged_across_a_refused_size(write):
    """96, 384 and 1536 frames, 384 refused: the arm's line has no point there (NaN), the
    refused case is its own mark, and the legend names the arm's refused points. Planted: the
    line drawn through the accepted sizes only (bridging 96 to 1536) failed."""
    run = synth.make_run(arms=("cpu-f32",), frames=(96, 384, 1536), reps=3, stages=("up0",))
    faults.cpu_hog(run, "up0/384/cpu-f32/host", rounds=(0, 1, 2))
    fig = _figures(write, run, kinds=("time",))[f"{synth.MODEL}-time"]
    (ax,) = fig.axes
    (line,) = [ln for label, ln in _series_lines(ax) if label == "cpu-f32/host"]
    ys = dict(zip(line.get_xdata(), line.get_ydata(), strict=True))
    assert set(ys) == {96, 384, 1536} and math.isnan(ys[384]) and ys[96] < ys[1536]
    assert "cpu-f32/host (refused)" in [t.get_text() for t in fig.legends[0].get_texts()]
    plt.close(fig)


# ---- time axes ----------------------------------------------------------------------------


def test_history_time_axis_is_a_date_axis_without_repeated_labels(tmp_path):
    """Six runs 20 s apart (a loop of short runs): a date axis (ConciseDateFormatter) whose tick
    labels are all different. Planted: labels at minute resolution (the old axis's) failed."""
    rep = _history(tmp_path, [0.0765] * 3 + [0.0766] * 3, every_s=20.0)
    fig = plot.history_figure(rep, Thresholds())
    (ax,) = fig.axes
    fig.canvas.draw()
    assert isinstance(ax.xaxis.get_major_formatter(), ConciseDateFormatter)
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert len(labels) >= 3 and len(labels) == len(set(labels)), labels
    plt.close(fig)


# ---- one colour per arm, twins share it --------------------------------------------------


def _with_twin(run: dict, arm: str) -> dict:
    """The run with an A/A twin `arm#2` of every case of `arm` (as --twins all writes it)."""
    twins = []
    for c in run["cases"]:
        if c["arm"] == arm:
            t = copy.deepcopy(c)
            t["arm"] = f"{arm}#2"
            t["id"] = c["id"].replace(f"/{arm}/", f"/{arm}#2/")
            twins.append(t)
    run["cases"] += twins
    return run


def test_one_colour_per_arm_across_figures_twins_share_it(write):
    """Across the time, ratio and TFLOP/s figures and two runs with different arm sets, each
    arm has one colour, the twin `cuda-f32#2` its arm's with another line style, and different
    arms different colours (errorbar series included). Planted, each seen failing: the colour
    by the arm's index among the figure's arms (the old _color); the twin's colour keyed by its
    full name; the time figure's lines coloured by their order in the panel."""
    a = _with_twin(synth.make_run(arms=tuple(synth.ARMS), frames=(96, 384), reps=3), "cuda-f32")
    b = synth.make_run(arms=("cuda-f32", "cudnn-f32"), frames=(96, 384), reps=3)
    colours, styles = {}, {}
    for run in (a, b):
        for fig in _figures(write, run).values():
            for ax in fig.axes:
                for label, ln in _series_lines(ax):
                    arm = label.split("/")[0]
                    colours.setdefault(arm, set()).add(ln.get_color())
                    styles.setdefault(arm, set()).add(ln.get_linestyle())
            plt.close(fig)
    assert all(len(c) == 1 for c in colours.values()), colours
    assert colours["cuda-f32#2"] == colours["cuda-f32"]
    assert styles["cuda-f32#2"] != styles["cuda-f32"]
    bases = {arm: c for arm, c in colours.items() if "#" not in arm}
    assert len({next(iter(c)) for c in bases.values()}) == len(bases), bases


def test_the_arms_of_the_examples_have_distinct_colours():
    """Every arm the committed records hold, built-in or plugin: one colour each, a twin its
    arm's. Planted: colours from the name's CRC-32 alone (tab10) failed: cuda-f32 and cudnn-f64
    collided."""
    arms = {c["arm"] for p in EXAMPLES for c in json.loads(p.read_text())["cases"]}
    bases = {plot_style.split_twin(a)[0] for a in arms}
    assert len({plot_style.arm_color(a) for a in bases}) == len(bases)
    for a in arms:
        assert plot_style.arm_color(a) == plot_style.arm_color(plot_style.split_twin(a)[0])


# ---- no series at 0 for missing data --------------------------------------------------------


def test_no_tflops_drawn_for_work_nobody_counted():
    """The committed sweep: cudnn-tf32 at 384 frames did its work on tensor pipes the profile
    does not count (0.3% of its FLOP counted), and the f64 arms count index arithmetic on the
    fp32 pipe. Nothing is drawn near 0: every plotted rate is at least a tenth of its panel's
    largest, the tf32 line breaks at 384 (NaN, not 0), and the title says what was left out.
    Planted: every counted path drawn (the old figure) failed the first assert."""
    a = assess.assess([load.load_run(SWEEP)])
    fig = dict(plot.figures(a, kinds=("tflops",)))[f"{synth.MODEL}-tflops"]
    for ax in fig.axes:
        ys = [y for ln in ax.get_lines() for y in np.asarray(ln.get_ydata(), float)]
        data = [ln for ln in ax.get_lines() if "(" in ln.get_label()]
        top = max(y for ln in data for y in ln.get_ydata() if math.isfinite(y))
        for ln in data:
            for y in ln.get_ydata():
                assert not math.isfinite(y) or y >= 0.1 * top, (ax.get_title(), ln.get_label())
        assert ys
    tf32 = [
        ln for ax in fig.axes for ln in ax.get_lines() if ln.get_label().startswith("cudnn-tf32")
    ]
    (line,) = tf32
    frames = list(line.get_xdata())
    assert math.isnan(line.get_ydata()[frames.index(384)])
    assert "not drawn" in fig._suptitle.get_text() and "cudnn-tf32/resident up0/384" in (
        fig._suptitle.get_text()
    )
    plt.close(fig)


def test_missing_counters_break_the_line(write):
    """A case whose counters were unavailable: its frames has no point (NaN), the line is not
    drawn through it at 0, and the title says so. Planted: a missing case drawn at 0 failed."""
    run = synth.make_run(arms=("cuda-f32",), frames=(96, 384, 1536), reps=3, stages=("up0",))
    synth.case(run, "up0/384/cuda-f32/resident")["counters"] = {
        "status": "unavailable",
        "call": "cuptiProfilerInitialize",
        "message": "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
    }
    fig = _figures(write, run, kinds=("tflops",))[f"{synth.MODEL}-tflops"]
    (ax,) = fig.axes
    (line,) = [ln for ln in ax.get_lines() if ln.get_label().startswith("cuda-f32/")]
    ys = dict(zip(line.get_xdata(), line.get_ydata(), strict=True))
    assert math.isnan(ys[384]) and ys[96] > 0 and ys[1536] > 0
    assert "counters unavailable" in fig._suptitle.get_text()
    plt.close(fig)


# ---- exit status ------------------------------------------------------------------------------


def test_plot_exit_status_like_report(tmp_path, write):
    """Every point refused (a lapsed lease): exit 3, one line on stderr saying nothing was
    accepted, the figures still written; a clean run: exit 0, nothing on stderr. Planted:
    `plot` returning 0 whatever it drew failed."""
    bad = synth.make_run(reps=3)
    faults.lapsed_lease(bad)
    rc, out, err = _cli("plot", write(bad), "--out", tmp_path / "bad")
    assert rc == 3 and err.count("\n") == 1 and "nothing accepted" in err, err
    assert "lease-expired" in err and out.strip()
    rc, out, err = _cli("plot", write(synth.make_run(reps=3)), "--out", tmp_path / "ok")
    assert rc == 0 and err == "", err


def test_plot_case_exit_status_when_every_run_is_refused(tmp_path):
    """The history of a case whose every run was refused: exit 3 with one line. Planted: the
    old `plot --case` (exit 0) failed."""
    for i in range(3):
        run = synth.make_run(seed=30 + i, start=1_795_000_000.0 + 3600 * i, token=str(60 + i))
        faults.lapsed_lease(run)
        (tmp_path / f"r{i}.json").write_text(json.dumps(run))
    rc, _, err = _cli("plot", "--case", HOST, "--history", tmp_path, "--out", tmp_path / "p")
    assert rc == 3 and err.count("\n") == 1 and "nothing accepted: all 3" in err, err


# ---- SVG text and PNG bytes ---------------------------------------------------------------------


def test_render_gives_svg_text_and_png_bytes(write, tmp_path):
    """Every kind renders as SVG text, the <svg> element alone (an HTML page inlines it), and as
    PNG bytes. Planted, each seen failing: the SVG written through a bytes buffer (bytes
    returned); the SVG with its XML declaration left on."""
    open_before = plt.get_fignums()
    a = assess.assess([load.load_run(write(synth.make_run(reps=3)))])
    rep = _history(tmp_path, [0.0765, 0.0766, 0.0767])
    for kind, source in [("time", a), ("ratio", a), ("tflops", a), ("history", rep)]:
        svg = plot.render(kind, source, "svg")
        png = plot.render(kind, source, "png")
        assert svg and svg.keys() == png.keys(), kind
        for text in svg.values():
            assert isinstance(text, str) and text.startswith("<svg") and "<?xml" not in text
        for raw in png.values():
            assert isinstance(raw, bytes) and raw.startswith(b"\x89PNG")
    with pytest.raises(ValueError):
        plot.render("pie", a)
    assert plt.get_fignums() == open_before


def test_figure_files_are_whole_and_readable_by_others(tmp_path, write):
    """Each figure file is renamed into place whole (no temporary left) with the umask's mode,
    as any file the user writes. Planted: tempfile.mkstemp (mode 0600) failed the mode assert."""
    a = assess.assess([load.load_run(write(synth.make_run(reps=3)))])
    old = os.umask(0o022)
    try:
        written = plot.plot(a, tmp_path / "out")
    finally:
        os.umask(old)
    assert written and sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        p.name for p in written
    )
    assert all(p.stat().st_mode & 0o777 == 0o644 for p in written)
