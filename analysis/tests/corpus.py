"""Corpora of synthetic runs for the instrument's own error: clean runs whose round-to-round
noise is resampled from the committed H200 records (per staging: host, resident), and the same
runs with one fault planted each. `rate(...)` says how often the analysis refused what it should
(or should not) have."""

from __future__ import annotations

import json
from pathlib import Path

import faults
import numpy as np
import synth

from convbench_analysis import assess, load, report

FIXTURES = synth.REPO / "results" / "examples"
NOISE_FROM = ("up0.json", "instrument.json", "cpu-f32.json")
ARMS = ("cpu-f64", "cpu-f32", "cuda-f32", "cuda-f64", "cudnn-f32", "cudnn-f64")
HOST, DEV = "up0/96/cpu-f64/host", "up0/96/cuda-f32/resident"


def residuals() -> dict[str, np.ndarray]:
    """log(sample / its case's median) of every sample of every recorded case, per staging."""
    pool: dict[str, list[float]] = {}
    for name in NOISE_FROM:
        for c in json.loads((FIXTURES / name).read_text())["cases"]:
            x = np.array([s["seconds"] for s in c["samples"]])
            if len(x) >= 3:
                pool.setdefault(c["staging"], []).extend(np.log(x / np.median(x)))
    return {k: np.array(v) for k, v in pool.items()}


_POOL = None


def clean_run(seed: int, reps: int = 5) -> dict:
    global _POOL
    _POOL = _POOL or residuals()
    run = synth.make_run(
        stages=("up0", "up1"),
        frames=(96,),
        arms=ARMS,
        reps=reps,
        seed=seed,
        start=1_795_000_000.0 + seed * 1000.0,
        token=str(5000 + seed),
    )
    rng = np.random.default_rng(seed)
    for c in run["cases"]:
        x = np.array([s["seconds"] for s in c["samples"]])
        draws = rng.choice(_POOL[c["staging"]], len(x))
        synth.set_seconds(c, list(np.median(x) * np.exp(draws)))
    return run


def judge(run: dict, tmp: Path, name: str) -> dict:
    p = tmp / name
    p.write_text(json.dumps(run))
    return report.build(assess.assess([load.load_run(p)]))


def false_refusals(tmp: Path, n: int = 30) -> tuple[int, int]:
    """(refused rows, rows) over n clean runs: every case row and every ratio row."""
    refused = total = 0
    for seed in range(n):
        rep = judge(clean_run(seed, reps=5 + seed % 5), tmp, f"clean{seed}.json")
        rows = [r for g in rep["groups"] for r in g["cases"] + g["rows"]]
        total += len(rows)
        refused += sum(r["status"] == "REFUSED" for r in rows)
    return refused, total


def _plant(kind: str, run: dict) -> None:
    {
        "foreign-gpu": lambda r: faults.foreign_gpu(r, DEV),
        "cpu-hog": lambda r: faults.cpu_hog(r, HOST),
        "slow-cpu": lambda r: faults.slow_cpu(r, HOST),
        "pinned-hog": lambda r: faults.pinned_hog(r, HOST),
        "bypassing-run": faults.bypassing_run,
        "lapsed-lease": faults.lapsed_lease,
        "power-capped-arm": faults.power_capped_arm,
        "stolen-host": lambda r: faults.stolen_host(r, HOST),
    }[kind](run)


# fault -> the code that must refuse it, and where: a case id, the run (None), or a ratio
EXPECT = {
    "foreign-gpu": ("foreign-gpu", DEV),
    "cpu-hog": ("foreign-cpu", HOST),
    "slow-cpu": ("host-speed", HOST),
    "pinned-hog": ("foreign-cpu", HOST),
    "bypassing-run": ("lease-none", None),
    "lapsed-lease": ("lease-expired", None),
    "power-capped-arm": ("throttle-differs", ("cuda-f32/resident", "cudnn-f32/resident")),
    "stolen-host": ("host-steal", HOST),
}


def caught(kind: str, tmp: Path, n: int = 12) -> float:
    """The fraction of n faulty runs refused with the right code at the right place."""
    code, where = EXPECT[kind]
    hits = 0
    for seed in range(n):
        run = clean_run(100 + seed, reps=5 + seed % 5)
        _plant(kind, run)
        rep = judge(run, tmp, f"{kind}{seed}.json")
        if where is None:
            found = {f["code"] for f in rep["runs"][0]["findings"]}
        elif isinstance(where, tuple):
            rows = [r for g in rep["groups"] for r in g["rows"] if (r["arm"], r["den"]) == where]
            found = {f["code"] for r in rows if r["status"] == "REFUSED" for f in r["reasons"]}
            found = found if len(rows) == 2 else set()  # up0 and up1: both must be refused
            if found and not all(r["status"] == "REFUSED" for r in rows):
                found = set()
        else:
            row = next(r for g in rep["groups"] for r in g["cases"] if r["case"] == where)
            found = {f["code"] for f in row["reasons"]} if row["status"] == "REFUSED" else set()
        hits += code in found
    return hits / n
