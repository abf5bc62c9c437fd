"""scripts/misses_plan.py: one bench_conv run per length and reference arm over the MISSED cases
only, causal stages without --frames, bad records refused in one line. Planted faults seen
failing: every row taken (met ones too), the reference left out of the arms, runs keyed by length
alone (a dmma stage then ran beside cuDNN's f32)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "misses_plan.py"
spec = importlib.util.spec_from_file_location("misses_plan", SCRIPT)
mp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mp)


def row(stage, frames, cand, status="MISSED"):
    return {"stage": stage, "frames": frames, "candidate": cand, "status": status}


def target(ref, rows):
    return {"target": {"reference": ref}, "rows": rows}


JUDGED = {
    "targets": [
        target(
            "cudnn-f32",
            [row("amp4.k3.d1", 96, "cuda-f32x3"), row("amp3.k3.d1", 96, "cuda-f32x3", "met")],
        ),
        target("cublas-dgemm", [row("up1", 96, "cuda-f64-dmma"), row("up2", 384, "cuda-f64-dmma")]),
        target(
            "cuda-launch",
            [
                row("causal.c2048.l1.b1", 1, "cuda-causal-tiled"),
                row("causal.c2048.l1.b1", 1, "cuda-causal-register"),
                row("causal.c8192.l1.b8.state", 1, "cuda-causal-tiled", "no data"),
            ],
        ),
    ]
}


def test_one_run_per_length_and_reference():
    runs = mp.plan(JUDGED)
    assert [
        "--stage",
        "causal.c2048.l1.b1",
        "--arms",
        "cuda-causal-register,cuda-causal-tiled,cuda-launch",
    ] in runs
    assert ["--stage", "amp4.k3.d1", "--arms", "cuda-f32x3,cudnn-f32", "--frames", "96"] in runs
    assert ["--stage", "up1", "--arms", "cublas-dgemm,cuda-f64-dmma", "--frames", "96"] in runs
    assert ["--stage", "up2", "--arms", "cublas-dgemm,cuda-f64-dmma", "--frames", "384"] in runs
    assert len(runs) == 4


def test_nothing_missed_no_run():
    assert (
        mp.plan({"targets": [target("cudnn-f32", [row("amp0.k3.d1", 96, "cuda-f32", "met")])]})
        == []
    )


def test_bad_record_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    p = subprocess.run([sys.executable, str(SCRIPT), str(bad)], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.startswith("misses_plan: ") and p.stderr.count("\n") == 1
    assert "Traceback" not in p.stderr
