"""Figures from a sweep: each file exists, is non-empty and opens as an image.

Planted fault seen failing (then reverted): plot() without the counters figure:
test_sweep_figures found no *-tflops.png."""

import matplotlib.image as mpimg
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
