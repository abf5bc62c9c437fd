"""scripts/perf_table.py on synthetic records with known answers (synth's cuda-f32 runs at 30
TFLOP/s, cudnn-f32 at 25 with more fixed cost: faster in every case), so the table and its
tallies are asserted as properties, not as one run's numbers.

Planted faults seen failing (then reverted): the cuDNN comparison written `f32 > n32` (met in
0 of 6); the refusal read from the wrong run index (for_case(1, ...): no dagger, no "refused"
count)."""

import json
import subprocess
import sys
from pathlib import Path

import synth

REPO = Path(__file__).resolve().parents[2]
ARMS = ("cpu-f64", "cuda-f32", "cuda-f64", "cudnn-f32", "cudnn-f64")


def table(*paths, doc=False):
    args = [sys.executable, str(REPO / "scripts/perf_table.py"), *(["--doc"] if doc else [])]
    return subprocess.run([*args, *map(str, paths)], capture_output=True, text=True, timeout=120)


def _write(tmp_path, run, name="run.json"):
    p = tmp_path / name
    p.write_text(json.dumps(run))
    return p


def test_every_case_met_when_our_arm_is_faster(tmp_path):
    out = table(_write(tmp_path, synth.make_run(arms=ARMS))).stdout
    rows = [ln for ln in out.splitlines() if ln.startswith(f"| {synth.MODEL} |")]
    assert len(rows) == 6  # 2 stages x 3 frames
    assert "- cuda-f32 faster than cudnn-f32: met in 6 of 6 (ratios " in out
    assert "- cuda-f64 faster than cudnn-f64: met in 6 of 6" in out
    assert "refused by the analysis" not in out and "†" not in "".join(rows)


def test_a_slower_case_is_a_named_miss_and_a_refused_one_is_marked(tmp_path):
    run = synth.make_run(arms=ARMS)
    c = synth.case(run, "up1/384/cuda-f32/resident")
    synth.set_seconds(c, [s["seconds"] * 2.0 for s in c["samples"]])
    d = synth.case(run, "up0/96/cuda-f64/resident")
    synth.set_seconds(
        d, [s["seconds"] * f for s, f in zip(d["samples"], (1, 1.3, 1, 1, 1), strict=True)]
    )
    out = table(_write(tmp_path, run)).stdout
    assert "- cuda-f32 faster than cudnn-f32: met in 5 of 6" in out
    assert f"misses (ratio): {synth.MODEL} up1/384 " in out
    assert "- cuda-f64 faster than cudnn-f64: met in 6 of 6 (ratios" in out
    assert "1 of the 6 refused by the analysis" in out
    up0 = next(ln for ln in out.splitlines() if "| up0 | 96 |" in ln)
    assert "†" in up0


def test_doc_has_a_section_per_record(tmp_path):
    a = _write(tmp_path, synth.make_run(arms=ARMS), "a.json")
    b = _write(tmp_path, synth.make_run(arms=ARMS, seed=3, token="9"), "b.json")
    r = table(a, b, doc=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# Results on the H200")
    assert "## `a.json`" in r.stdout and "## `b.json`" in r.stdout
    assert "| up0/96/cuda-f32/resident / cudnn-f32/resident |" in r.stdout


def test_perf_table_refuses_an_unreadable_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    r = table(bad)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "bad.json" in r.stderr


def test_the_results_document_is_what_its_command_makes():
    # docs/results-h200.md is generated from the committed records; its first lines name the
    # command. A hand edit, or a fixture changed without regenerating, fails here.
    doc = (REPO / "docs/results-h200.md").read_text()
    cmd = doc.split("`python3 scripts/perf_table.py --doc ", 1)[1].split(" > docs/", 1)[0]
    r = subprocess.run(
        [sys.executable, "scripts/perf_table.py", "--doc", *cmd.split()],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == doc
