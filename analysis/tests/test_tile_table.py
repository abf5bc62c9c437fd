"""`convbench-analyze tile-table` on a synthetic record with known times: the plan's case
(cuda-tf32, its kernel named in the record) against hidden variants of both orientations timed at
known fractions of it; likewise cuda-f64-dmma against its DMMA tiles. Planted (seen failing): the
best variant taken as the slowest (max instead of min); the DMMA variants' pattern left out (no
variant), likewise the forward tile's and the persistent and one-tile blocks'; the rank counting
the variants slower than the plan. Each format parses as itself."""

import csv
import io
import json
import subprocess
import sys

import pytest
import synth
from test_perf_table import relabel

# variant -> its time as a fraction of the plan's
KNOWN = {"rows-n128-s1": 0.8, "rows-n192-s2": 1.3, "pos-n24-g2": 1.1}


def tile_table(*args):
    return subprocess.run(
        [sys.executable, "-m", "convbench_analysis", "tile-table", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_table(tmp_path, run, *args):
    p = tmp_path / "tiles.json"
    p.write_text(json.dumps(run))
    return tile_table(p, *args)


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
        (
            "cuda-f32",
            "cuda-f32x3",
            {"persistent": 0.7, "one-tile": 1.05, "pos-n24-g1": 1.2},
            "wgmma 3xtf32 positions-on-M m64n24k8 tile 128x24x32 stages 3",
            "persistent",
            "1.429",
        ),
        (
            "cuda-f32",
            "cuda-tf32",
            {"stages3": 0.8, "stages2": 1.1, "persistent": 1.2},
            "wgmma tf32 positions-on-M m64n48k8 tile 128x48x32 stages 6",
            "stages3",
            "1.250",
        ),
        (
            "cuda-f64",
            "cuda-f32",
            {"fwd-128x128-s1": 1.2, "fwd-32x256-s3": 0.95, "fwd-32x256-s6": 1.02},
            "implicit-gemm f32 fma 32x256x8 split 6",
            "fwd-32x256-s3",
            "1.053",
        ),
    ],
)
def test_plan_against_the_best_variant(tmp_path, source, arm, known, kernel, best, ratio):
    # The plan (its kernel named) against its variants: the best one, the plan's time over it,
    # the plan's rank among the three variants and itself.
    run = sweep(source, arm, known, kernel)
    r = run_table(tmp_path, run, "--format", "csv")
    assert r.returncode == 0, r.stderr
    table = list(csv.DictReader(io.StringIO(r.stdout)))
    mine = [x for x in table if x["arm"] == arm]
    assert len(mine) == 6 and len(table) == 6
    for x in mine:
        assert x["best"] == best and x["plan/best"] == ratio and x["rank"] == "2/3", x
        assert x["kernel"] == kernel and x["record"] == "tiles.json"
    r = run_table(tmp_path, run)
    assert r.returncode == 0, r.stderr
    assert "the plan within 5% of the best variant in 0 of 6 cases" in r.stdout
    r = run_table(tmp_path, run, "--format", "json")
    got = json.loads(r.stdout)
    assert len(got) == 6 and all(x["best"] == best and not x["near"] for x in got)
    assert all(abs(x["plan_s"] / x["best_s"] - float(ratio)) < 1e-3 for x in got)
    md = [x for x in run_table(tmp_path, run, "--format", "md").stdout.splitlines() if x]
    assert md[0].startswith("| record") and set(md[1]) <= set("|-:") and len(md) == 2 + 6 + 1


def test_a_bad_record_is_one_line_and_exit_2(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{")
    r = tile_table(p)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and not r.stdout
    r = tile_table("--help")
    assert r.returncode == 0 and "forced tile" in r.stdout
