"""The report's round drift: a move every device case shares from round to round (the machine,
not an arm), measured as the median over cases of each round's log time against the case's mean,
and divided out of each case's CV (`cv_without_drift`).

Planted faults seen failing (then reverted): the mean over cases instead of the median
(test_one_noisy_arm_does_not_move_the_drift failed: one arm's own noise moved every round's
drift); the drift not divided out (cv_without_drift == cv: test_common_drift_is_found_and_removed
failed)."""

import math

import numpy as np
import synth

from convbench_analysis import assess, load, report

DRIFT = [1.0, 1.03, 0.98, 1.01, 0.99, 1.02]  # every device case, round by round


def _report(path, baseline=None):
    return report.build(assess.assess([load.load_run(path)]), baseline)


def _scale(run, factors, device_only=True, only=None):
    for c in run["cases"]:
        if (c["device"] or not device_only) and (only is None or c["id"] == only):
            synth.set_seconds(c, [s["seconds"] * factors[s["round"]] for s in c["samples"]])


def test_common_drift_is_found_and_removed(write):
    run = synth.make_run(reps=6, seed=3)
    _scale(run, DRIFT)
    rep = _report(write(run))
    d = rep["runs"][0]["round_drift"]
    geo = math.exp(np.mean(np.log(DRIFT)))
    assert d["rounds"] == list(range(6)) and d["cases"] == 12  # 2 stages x 3 frames x 2 arms
    assert np.allclose(d["drift"], [f / geo - 1 for f in DRIFT], atol=0.003)
    assert 0.045 < d["range"] < 0.055
    rows = [r for g in rep["groups"] for r in g["cases"]]
    dev = [r for r in rows if "/resident" in r["arm"]]
    assert dev and all(r["cv"] > 0.015 and r["cv_without_drift"] < 0.006 for r in dev)
    assert all(r["cv_without_drift"] is None for r in rows if "/host" in r["arm"])
    text = report.render(rep)
    assert "round drift, shared by the 12 device cases: r0 " in text and "r1 +2." in text


def test_one_noisy_arm_does_not_move_the_drift(write):
    run = synth.make_run(reps=6, seed=4)
    _scale(run, [1.0, 1.10, 0.93, 1.0, 1.07, 0.95], only="up0/96/cuda-f32/resident")
    d = _report(write(run))["runs"][0]["round_drift"]
    assert d["range"] < 0.01  # synth's own 0.2% noise, not the one arm's 18%


def test_no_drift_line_with_too_few_device_cases(write):
    run = synth.make_run(stages=("up0",), frames=(96,), arms=("cpu-f64", "cuda-f32"), reps=5)
    rep = _report(write(run))
    assert rep["runs"][0]["round_drift"] is None
    assert "round drift" not in report.render(rep)
