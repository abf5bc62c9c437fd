"""Figures from a sweep: each file exists, is non-empty and opens as an image.

Planted fault seen failing (then reverted): plot() without the counters figure:
test_sweep_figures found no *-tflops.png."""

import matplotlib
import matplotlib.image as mpimg
import matplotlib.pyplot
import synth

from convbench_analysis import cli


def _check_images(paths, stems):
    names = {p.name for p in paths}
    for stem in stems:
        assert f"{stem}.png" in names and f"{stem}.svg" in names, names
    for p in paths:
        assert p.stat().st_size > 1000
        if p.suffix == ".png":
            img = mpimg.imread(p)
            assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
        else:
            assert "<svg" in p.read_text()[:2000]


def test_sweep_figures(tmp_path, write):
    run = synth.make_run(arms=tuple(synth.ARMS), frames=(96, 384, 1536), reps=3)
    out = tmp_path / "plots"
    assert cli.main(["plot", str(write(run)), "--out", str(out)]) == 0
    paths = sorted(out.iterdir())
    m = synth.MODEL
    _check_images(paths, [f"{m}-time", f"{m}-ratio", f"{m}-tflops"])


def test_no_counters_no_tflops_figure(tmp_path, write):
    run = synth.make_run(reps=3)
    for c in run["cases"]:
        c["counters"] = {
            "status": "unavailable",
            "call": "cuptiProfilerInitialize",
            "message": "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
        }
    out = tmp_path / "plots"
    assert cli.main(["plot", str(write(run)), "--out", str(out)]) == 0
    names = {p.name for p in out.iterdir()}
    assert not any("tflops" in n for n in names) and any("time.png" in n for n in names)


def test_unwritable_out_is_bad_input(tmp_path, write, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert cli.main(["plot", str(write(synth.make_run(reps=3))), "--out", str(blocker)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_no_text_overlaps_in_a_six_stage_figure(write):
    # Title, legend and every panel (its title, tick labels, axis labels) are disjoint and
    # inside the figure. Planted fault seen failing: the old layout (one row of panels, no
    # constrained layout, legend at the upper left) put the figure title over the panel titles
    # and the legend over the first panel.
    from convbench_analysis import assess, load, plot

    run = synth.make_run(stages=tuple(f"up{i}" for i in range(6)), arms=tuple(synth.ARMS), reps=3)
    a = assess.assess([load.load_run(write(run))])
    figs = list(plot.figures(a))
    assert [stem.rsplit("-", 1)[1] for stem, _ in figs] == ["time", "ratio", "tflops"]
    for stem, fig in figs:
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        boxes = [("title", fig._suptitle.get_window_extent(r))]
        boxes += [("legend", leg.get_window_extent(r)) for leg in fig.legends]
        boxes += [(ax.get_title(), ax.get_tightbbox(r)) for ax in fig.axes]
        whole = fig.bbox
        for name, b in boxes:
            assert b.x0 >= whole.x0 - 1 and b.x1 <= whole.x1 + 1, (stem, name)
            assert b.y0 >= whole.y0 - 1 and b.y1 <= whole.y1 + 1, (stem, name)
        for i, (n1, b1) in enumerate(boxes):
            for n2, b2 in boxes[i + 1 :]:
                assert not b1.overlaps(b2), (stem, n1, n2)
        panels = 12 if stem.endswith("tflops") else 6  # the counters: one per pipe and stage
        rows = {round(ax.get_position().y0, 3) for ax in fig.axes}
        assert len(fig.axes) == panels and len(rows) == -(-panels // plot.MAX_COLUMNS)
        matplotlib.pyplot.close(fig)
