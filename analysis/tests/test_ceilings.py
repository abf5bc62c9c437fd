"""ceilings.py on a synthetic record whose ceilings are timed at known fractions of the arms they
judge, in the same rounds: every "% of ceiling" has a known value.

Planted faults seen failing (then reverted): tf32 mapped to cublas-sgemm (cuda-tf32 read 80%,
not 50%); the ratio taken the wrong way round (arm / ceiling: 125% where 80% is right)."""

import json
import subprocess
import sys

import pytest
import synth
from test_perf_table import relabel

from convbench_analysis import assess, ceilings, load

# arm -> its ceiling's time as a fraction of the arm's, round by round
KNOWN = {"cuda-f32": 0.8, "cuda-tf32": 0.5, "cuda-f32x3": 0.4, "cuda-f64-dmma": 1.25}
CEILING = {
    "cuda-f32": "cublas-sgemm",
    "cuda-f32x3": "cublas-sgemm",
    "cuda-tf32": "cublas-tf32",
    "cuda-f64-dmma": "cublas-dgemm",
}


def ceiling_run(reps=8, fields=False):
    """cuda-f32 and its copies as our tensor-core arms; cublas-* cases copied from the arms they
    judge, their seconds scaled so that ceiling / arm is KNOWN (cuda-f32x3 against sgemm: its
    own seconds scaled by 0.8 / 0.4 = 2)."""
    run = synth.make_run(arms=("cpu-f64", "cuda-f32", "cuda-f64"), reps=reps)
    run = relabel(
        run,
        {
            "cuda-f32": ["cuda-tf32", "cuda-f32x3", "cublas-sgemm", "cublas-tf32"],
            "cuda-f64": ["cuda-f64-dmma", "cublas-dgemm"],
        },
    )
    by = {c["id"]: c for c in run["cases"]}
    for c in run["cases"]:
        if c["arm"] == "cuda-f32x3":
            synth.set_seconds(c, [s["seconds"] * 2.0 for s in c["samples"]])
        if c["arm"].startswith("cublas-"):
            c["gate"]["kind"] = "gemm"
            if fields:
                c["role"] = "ceiling"
    for c in run["cases"]:
        if c["arm"].startswith("cublas-"):
            arm = {"cublas-sgemm": "cuda-f32", "cublas-tf32": "cuda-tf32"}.get(
                c["arm"], "cuda-f64-dmma"
            )
            mine = by[f"{c['stage']}/{c['frames']}/{arm}/resident"]
            synth.set_seconds(c, [s["seconds"] * KNOWN[arm] for s in mine["samples"]])
    return run


def rows_of(tmp_path, run):
    p = tmp_path / "run.json"
    p.write_text(json.dumps(run))
    return ceilings.build(assess.assess([load.load_run(p)]))


def test_each_arm_against_the_ceiling_of_its_precision(tmp_path):
    rows = rows_of(tmp_path, ceiling_run())
    assert len(rows) == 6 * 5  # 2 stages x 3 frames x (cuda-f32, f32x3, tf32, f64, f64-dmma)
    for r in rows:
        assert r["ceiling"] == CEILING.get(r["arm"], "cublas-dgemm"), r
        want = {"cuda-f64": 1.25, "cuda-f32x3": 0.4}.get(r["arm"], KNOWN.get(r["arm"]))
        assert r["percent"] == pytest.approx(100 * want, rel=1e-9), r
        lo, hi = r["ci_percent"]
        assert lo <= r["percent"] <= hi
        assert r["paired_rounds"] == 8 and not r["refused"]


def test_the_recorded_facts_decide_over_the_name(tmp_path):
    # A plugin arm named after nothing, whose record says tf32: judged by cublas-tf32.
    run = ceiling_run(fields=True)
    for c in run["cases"]:
        if c["arm"] == "cuda-tf32":
            c["arm"], c["precision"], c["role"] = "plugin-x", "tf32", "candidate"
            c["id"] = c["id"].replace("/cuda-tf32/", "/plugin-x/")
    for o in run["plan"]["order"]:
        o["cases"] = [x.replace("/cuda-tf32/", "/plugin-x/") for x in o["cases"]]
    run["plan"]["arms"] = sorted({c["arm"] for c in run["cases"]})
    rows = [r for r in rows_of(tmp_path, run) if r["arm"] == "plugin-x"]
    assert len(rows) == 6 and all(r["ceiling"] == "cublas-tf32" for r in rows)
    assert all(r["percent"] == pytest.approx(50.0) for r in rows)


def test_a_ceiling_that_failed_its_check_judges_nothing(tmp_path):
    run = ceiling_run()
    for c in run["cases"]:
        if c["arm"] == "cublas-tf32":
            c["gate"]["result"] = "fail"
            c["samples"], c["stats"] = [], None
    for o in run["plan"]["order"]:
        o["cases"] = [x for x in o["cases"] if "/cublas-tf32/" not in x]
    rows = rows_of(tmp_path, run)
    assert not [r for r in rows if r["ceiling"] == "cublas-tf32"]
    assert len(rows) == 6 * 4


def test_the_report_prints_the_section_and_no_ratio_against_a_gemm(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(json.dumps(ceiling_run()))
    cmd = [sys.executable, "-m", "convbench_analysis", "report", "--no-history", str(p)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 4), r.stderr
    assert "% of ceiling" in r.stdout
    line = next(
        ln for ln in r.stdout.splitlines() if "up0/96/cuda-tf32/resident " in ln and "cublas" in ln
    )
    assert "cublas-tf32" in line and "50.0%" in line
    rep = json.loads(
        subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=120).stdout
    )
    dens = {row["den"] for g in rep["groups"] for row in g["rows"]}
    arms = {row["arm"] for g in rep["groups"] for row in g["rows"]}
    assert not any(x.startswith("cublas-") for x in dens | arms)  # a GEMM is no convolution
    assert len(rep["ceilings"]) == 30


# The causal pair against the hardware's own ceilings, timed in the same rounds: the copy of the
# case's bytes at 0.9 of the register kernel's time, the empty launch at 0.5 of it.
HARDWARE = {"cuda-copy": 0.9, "cuda-launch": 0.5}
PAIR = ("cuda-causal-register", "cuda-causal-tiled")


def causal_run(stage="causal.c2048.l1.b1"):
    """cuda-f32 relabelled as the causal pair and the copy and launch ceilings (the record's
    fields as bench_conv writes them), its stage renamed to a causal case; the tiled kernel at 2x
    the register kernel's time."""
    run = synth.make_run(arms=("cpu-f64", "cuda-f32"), stages=("up0",), frames=(96,), reps=8)
    run = relabel(run, {"cuda-f32": [*PAIR, *HARDWARE]}, keep=False)
    ids = {}
    for c in run["cases"]:
        new = c["id"].replace("up0/", f"{stage}/", 1)
        ids[c["id"]], c["id"], c["stage"] = new, new, stage
        if c["arm"] in HARDWARE:
            c["role"], c["precision"], c["math"] = "ceiling", None, "memcpy"
            c["gate"] = {
                "kind": "self",
                "result": "pass",
                "mismatches": 0,
                "cells": 8,
                "max_abs_err": None,
                "rel_l2_err": None,
                "tolerance": None,
            }
        elif c["arm"] in PAIR:
            c["role"], c["precision"], c["math"] = "candidate", "f32", "simt"
    for o in run["plan"]["order"]:
        o["cases"] = [ids.get(x, x) for x in o["cases"]]
    run["plan"]["stages"] = [stage]
    by = {c["arm"]: c for c in run["cases"]}
    reg = [s["seconds"] for s in by["cuda-causal-register"]["samples"]]
    synth.set_seconds(by["cuda-causal-tiled"], [2.0 * s for s in reg])
    for arm, f in HARDWARE.items():
        synth.set_seconds(by[arm], [f * s for s in reg])
    return run


def test_the_causal_pair_against_the_copy_and_the_launch(tmp_path):
    """Planted (seen failing): ceilings_of without the copy and launch ceilings (no rows)."""
    rows = rows_of(tmp_path, causal_run())
    got = {(r["arm"], r["ceiling"]): r for r in rows}
    assert sorted(got) == sorted((a, c) for a in PAIR for c in HARDWARE)
    for (arm, ceiling), r in got.items():
        want = HARDWARE[ceiling] / (1.0 if arm == "cuda-causal-register" else 2.0)
        assert r["percent"] == pytest.approx(100 * want, rel=1e-9), r
        assert r["paired_rounds"] == 8 and not r["refused"]
        assert r["case"].startswith("causal.c2048.l1.b1/")


def test_a_self_checked_ceiling_is_read_and_reported(tmp_path):
    """The record's gate kind "self" passes the schema and the report prints the pair against
    each ceiling. Planted (seen failing): "self" missing from the schema's gate kinds (the record
    refused)."""
    p = tmp_path / "run.json"
    p.write_text(json.dumps(causal_run()))
    load.load_run(p)  # validates against the schema
    cmd = [sys.executable, "-m", "convbench_analysis", "report", "--no-history", str(p)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 4), r.stderr
    assert "% of ceiling" in r.stdout
    lines = [ln for ln in r.stdout.splitlines() if "/cuda-causal-register/resident " in ln]
    assert any("cuda-copy" in ln and "90.0%" in ln for ln in lines), r.stdout
    assert any("cuda-launch" in ln and "50.0%" in ln for ln in lines), r.stdout
