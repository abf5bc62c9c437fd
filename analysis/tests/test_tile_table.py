"""scripts/tile_table.py on a synthetic record with known times: the plan's case (cuda-tf32, its
kernel named in the record) against hidden variants of both orientations timed at known fractions
of it; likewise cuda-f64-dmma against its DMMA tiles. Planted (seen failing): the best variant
taken as the slowest (max instead of min); the DMMA variants' pattern left out (no variant)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import synth
from test_perf_table import relabel

REPO = Path(__file__).resolve().parents[2]
# variant -> its time as a fraction of the plan's
KNOWN = {"rows-n128-s1": 0.8, "rows-n192-s2": 1.3, "pos-n24-g2": 1.1}


def run_table(tmp_path, run):
    p = tmp_path / "tiles.json"
    p.write_text(json.dumps(run))
    return subprocess.run(
        [sys.executable, str(REPO / "scripts/tile_table.py"), str(p)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def sweep(source, arm, known, kernel):
    """A record of arm (the plan, its kernel named) beside arm@variant for each of known, timed
    at known[variant] times the plan's samples (synth's source arm relabelled)."""
    run = synth.make_run(arms=(source,))
    run = relabel(run, {source: [arm, *[f"{arm}@{v}" for v in known]]}, keep=False)
    plan = {c["id"]: c for c in run["cases"] if c["arm"] == arm}
    for c in run["cases"]:
        if "@" in c["arm"]:
            mine = plan[c["id"].replace(f"/{c['arm']}/", f"/{arm}/")]
            f = known[c["arm"].split("@")[1]]
            synth.set_seconds(c, [s["seconds"] * f for s in mine["samples"]])
        else:
            c["kernel"] = {"name": kernel, "issued_macs": 1}
    return run


@pytest.mark.parametrize(
    "source, arm, known, kernel, best, ratio",
    [
        ("cuda-f32", "cuda-tf32", KNOWN, "wgmma tf32 rows-on-M m64n192k8", "rows-n128-s1", "1.250"),
        (
            "cuda-f64",
            "cuda-f64-dmma",
            {"t128x64-s1": 1.1, "t64x64-s2": 0.9, "t32x128-s1": 1.5},
            "dmma f64 m16n8k16 tile 128x32x16",
            "t64x64-s2",
            "1.111",
        ),
    ],
)
def test_plan_against_the_best_variant(tmp_path, source, arm, known, kernel, best, ratio):
    # The plan (its kernel named) against its variants: the best one, the plan's time over it,
    # the plan's rank among the three variants and itself.
    r = run_table(tmp_path, sweep(source, arm, known, kernel))
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if f" {arm} " in ln]
    assert len(lines) == 6
    for ln in lines:
        f = ln.split()
        assert f[4] == best and f[5] == ratio and f[6] == "2/3", ln
        assert f"[{kernel}]" in ln
    assert "the plan within 5% of the best variant in 0 of 6 cases" in r.stdout


def test_a_bad_record_is_one_line_and_exit_2(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{")
    r = subprocess.run(
        [sys.executable, str(REPO / "scripts/tile_table.py"), str(p)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1
