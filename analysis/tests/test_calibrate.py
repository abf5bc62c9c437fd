"""`calibrate`: per arm, the noise floor and how often the checks refuse an A/A comparison.

Planted fault seen failing (then reverted): the twin set against itself in calibrate.build
(every ratio exactly 1): test_calibrate_finds_a_biased_twin failed (no pair outside)."""

import json

import synth
from helpers import cli

ARMS = ("cpu-f64", "cuda-f32", "cuda-f32#2", "cudnn-f32", "cudnn-f32#2")


def _runs(tmp_path, n=3, bias=1.0):
    paths = []
    for i in range(n):
        run = synth.make_run(
            arms=ARMS, seed=60 + i, start=1_795_000_000.0 + 900 * i, token=str(60 + i)
        )
        for c in run["cases"]:
            if c["arm"] == "cuda-f32#2" and c["id"].startswith("up0/96/"):
                synth.set_seconds(c, [s["seconds"] * bias for s in c["samples"]])
        p = tmp_path / f"aa{i}.json"
        p.write_text(json.dumps(run))
        paths.append(p)
    return paths


def test_calibrate_reports_noise_floor_and_refusals(tmp_path):
    rc, out, err = cli("calibrate", *_runs(tmp_path), "--json")
    assert rc == 0, err
    rep = json.loads(out)
    arms = {r["arm"]: r for r in rep["arms"]}
    assert arms["cuda-f32/resident"]["aa_pairs"] == 18  # 3 runs x 2 stages x 3 frames
    assert arms["cuda-f32/resident"]["aa_covered"] == 18
    assert arms["cuda-f32/resident"]["aa_called"] == 0
    assert 0 < arms["cuda-f32/resident"]["noise_floor_cv"] < 0.01
    assert rep["false_refusal_rate"] == 0.0 and rep["coverage"] >= 0.95
    rc, out, _ = cli("calibrate", *_runs(tmp_path))
    assert "over 36 clean A/A pairs: " in out and "the checks would refuse 0 (0.0%)" in out


def test_calibrate_finds_a_biased_twin(tmp_path):
    rep = json.loads(cli("calibrate", *_runs(tmp_path, bias=1.03), "--json")[1])
    arms = {r["arm"]: r for r in rep["arms"]}
    # one twin per run (up0/96) 3% apart, beyond the 1% band: called, 1 outside its interval
    assert arms["cuda-f32/resident"]["aa_called"] == 3
    assert arms["cuda-f32/resident"]["aa_covered"] == 15
    assert arms["cudnn-f32/resident"]["aa_covered"] == 18
    assert arms["cudnn-f32/resident"]["aa_called"] == 0
    # a kind whose twins hold 1 only with a wider floor: calibrate says which floor would do
    assert rep["kinds"]["resident"]["floor_needed"] > 0.01
