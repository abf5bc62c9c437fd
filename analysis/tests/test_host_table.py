"""`convbench-analyze host-table` on three tiny synthetic records: two runs of one setting
(4 pinned threads) and one unpinned, each with host cases and a device case that the table leaves
out. The CV, the best-of-N drift and the pooled correlations are recomputed here with numpy from
the same numbers. Planted: drift from the runs' medians instead of their bests failed
test_row_numbers (the data makes the two differ); the CV with ddof=0 failed it too; the round
time left unnormalised by its run's median failed the correlation check; a record without
plan.placement exits 2 (one line on stderr, no document); a finding left out of findings() failed
test_findings_in_order. Each format parses as itself (csv by the csv module, json by json, md
with its header rule); the text table fits the width COLUMNS gives it.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from convbench_analysis import cli
from convbench_analysis import host_table as ht

THREADS = 4


def sample(seconds, speeds, imbalance, delays, psi, steal=0.0):
    """One round: speeds per worker as (before, after), run delays per thread in seconds."""
    return {
        "seconds": seconds,
        "imbalance": imbalance,
        "workers": [
            {
                "worker": i,
                "speed_before": {"relative": b},
                "speed_after": {"relative": a},
            }
            for i, (b, a) in enumerate(speeds)
        ],
        "contention": {
            "psi_some_share": psi,
            "steal_share": steal,
            "threads": [{"worker": i, "run_delay_s": d} for i, d in enumerate(delays)],
        },
    }


def make_samples(rng, base, n, psi_missing=()):
    out = []
    for i in range(n):
        secs = base * (1 + 0.1 * rng.random())
        speeds = [(0.8 + 0.2 * rng.random(), 0.8 + 0.2 * rng.random()) for _ in range(THREADS)]
        delays = [0.02 * secs * rng.random() for _ in range(THREADS)]
        psi = None if i in psi_missing else 0.05 * rng.random()
        steal = 0.2 * (secs / base - 1) + 0.01 * rng.random()  # steal tracks the slowdown
        out.append(sample(secs, speeds, 1 + 0.2 * rng.random(), delays, psi, steal))
    return out


def record(rng, pinned, started, bases, n=6, psi_missing=()):
    cases = []
    for arm, base in bases.items():
        cases.append(
            {
                "id": f"up0/96/{arm}/host",
                "arm": arm,
                "stage": "up0",
                "frames": 96,
                "staging": "host",
                "device": False,
                "samples": make_samples(rng, base, n, psi_missing),
            }
        )
    cases.append(
        {
            "id": "up0/96/cuda-f32/resident",
            "arm": "cuda-f32",
            "stage": "up0",
            "frames": 96,
            "staging": "resident",
            "device": True,
            "samples": make_samples(rng, 0.001, n),
        }
    )
    argv = ["build/bin/bench_conv", "--stage", "up0", "--threads", str(THREADS)]
    argv += [] if pinned else ["--no-pin"]
    argv += ["--reps", str(n), "--target-ci", "0", "--out", "/tmp/x/r.json"]
    return {
        "argv": argv,
        "started_utc": started,
        "host": {"name": "box", "cpu_model": "Test CPU", "cores": THREADS, "memory_bytes": 2**33},
        "context": {"mhz_per_cpu": 1000},
        "gpus": [],
        "plan": {
            "threads": THREADS,
            "placement": {"pinned": pinned, "cpus": list(range(THREADS)) if pinned else []},
            "stopping": {"min_rounds": n, "max_rounds": n, "target_ci_percent": 0.0},
        },
        "cases": cases,
    }


@pytest.fixture
def records(tmp_path):
    rng = np.random.default_rng(11)
    recs = {
        # the second run is slower as a whole, and one slow round pulls its median up further
        "pin-r1.json": record(rng, True, "2026-01-01T00:00:00.000Z", {"cpu-f64": 0.2}),
        "pin-r2.json": record(
            rng, True, "2026-01-01T00:00:10.000Z", {"cpu-f64": 0.23}, psi_missing=(2,)
        ),
        "nopin.json": record(
            rng, False, "2026-01-01T00:00:05.000Z", {"cpu-f64": 0.2, "cpu-f32": 0.1}
        ),
    }
    # medians and bests move differently: the second pinned run's median rises by half again
    for s in recs["pin-r2.json"]["cases"][0]["samples"][:4]:
        s["seconds"] *= 1.5
    paths = []
    for name, r in recs.items():
        p = tmp_path / name
        p.write_text(json.dumps(r))
        paths.append(p)
    return paths, recs


def expected(runs):
    """The row's numbers recomputed from the records' cases (numpy, nothing from host_table)."""
    secs = [np.array([s["seconds"] for s in c["samples"]]) for c in runs]
    cvs = [np.std(x, ddof=1) / np.mean(x) for x in secs]
    bests = [x.min() for x in secs]
    norm = np.concatenate([x / np.median(x) for x in secs])
    samples = [s for c in runs for s in c["samples"]]
    speed = [
        min(min(w["speed_before"]["relative"], w["speed_after"]["relative"]) for w in s["workers"])
        for s in samples
    ]
    delay = [
        max(t["run_delay_s"] for t in s["contention"]["threads"]) / s["seconds"] for s in samples
    ]
    psi = [s["contention"]["psi_some_share"] for s in samples]
    keep = [i for i, v in enumerate(psi) if v is not None]
    r = {
        "speed": np.corrcoef(norm, speed)[0, 1],
        "imbalance": np.corrcoef(norm, [s["imbalance"] for s in samples])[0, 1],
        "delay": np.corrcoef(norm, delay)[0, 1],
        "psi": np.corrcoef(norm[keep], np.array(psi, dtype=float)[keep])[0, 1],
        "steal": np.corrcoef(norm, [s["contention"]["steal_share"] for s in samples])[0, 1],
    }
    drift = max(bests) / min(bests) - 1 if len(runs) > 1 else None
    medians = [np.median(x) for x in secs]
    return {
        "cv": float(np.median(cvs)),
        "drift": drift,
        "median_drift": max(medians) / min(medians) - 1,
        "r": r,
        "n": len(norm),
    }


def test_row_numbers(records):
    paths, recs = records
    rows = ht.table_rows([(p, recs[p.name]) for p in paths])
    # pinned cpu-f64 (2 runs), unpinned cpu-f32 and cpu-f64 (1 run each); no device case
    assert [(x["pinned"], x["arm"], x["runs"]) for x in rows] == [
        (True, "cpu-f64", 2),
        (False, "cpu-f32", 1),
        (False, "cpu-f64", 1),
    ]
    pin = rows[0]
    want = expected([recs["pin-r1.json"]["cases"][0], recs["pin-r2.json"]["cases"][0]])
    # the data tells a drift of bests from a drift of medians
    assert abs(want["median_drift"] - want["drift"]) > 0.2
    assert pin["rule"] == "fixed 6" and pin["threads"] == THREADS and pin["rounds"] == [6, 6]
    assert pin["cv"] == pytest.approx(want["cv"], rel=1e-12)
    assert pin["drift"] == pytest.approx(want["drift"], rel=1e-12)
    assert pin["n"] == want["n"] == 12
    for k, v in want["r"].items():
        assert pin["r"][k] == pytest.approx(v, rel=1e-9, abs=1e-12), k
    one = rows[2]
    want1 = expected([recs["nopin.json"]["cases"][0]])
    assert one["drift"] is None and one["cv"] == pytest.approx(want1["cv"], rel=1e-12)
    for k, v in want1["r"].items():
        assert one["r"][k] == pytest.approx(v, rel=1e-9, abs=1e-12), k


def main(*argv):
    return cli.main(["host-table", *map(str, argv)])


def test_table_and_doc(records, tmp_path, capsys):
    paths, recs = records
    assert main("--format", "csv", *paths) == 0
    table = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    rows = ht.table_rows([(p, recs[p.name]) for p in paths])
    pin = rows[0]
    assert table[0] == list(ht.HEADERS) and len(table) == 1 + 3
    cells = next(r for r in table if r[2:4] == ["yes", "cpu-f64"])
    assert cells[:7] == ["fixed 6", "4", "yes", "cpu-f64", "up0/96", "2", "6"]
    assert cells[7] == f"{100 * pin['cv']:.1f}%" and cells[8] == f"{100 * pin['drift']:.1f}%"
    assert cells[9:] == [f"{pin['r'][k]:+.2f}" for k in ht.COVARIATES]
    out = tmp_path / "doc.md"
    assert main("--doc", "--out", out, *paths) == 0
    doc = out.read_text()
    md = [ln for ln in doc.splitlines() if ln.startswith("|")]
    assert len(md) == 2 + 3 and set(md[1]) <= set("|-:") and "| fixed 6 " in md[2]
    assert [c.strip() for c in md[2].strip("|").split("|")] == cells
    assert "`bench_conv --stage up0 --threads T [--no-pin] --reps 6 --target-ci 0`" in doc
    assert "started 10 s apart under the fixed 6 rule" in doc
    assert f"by up to {100 * pin['drift']:.1f}% (cpu-f64 up0/96, 4 threads, pinned" in doc
    assert "Test CPU, 4 cores at 1000 MHz, 8 GiB" in doc
    assert "`convbench-analyze host-table --doc results/pin-r1.json" in doc


def test_json_and_text(records, capsys, monkeypatch):
    paths, recs = records
    assert main("--format", "json", *paths) == 0
    got = json.loads(capsys.readouterr().out)
    rows = ht.table_rows([(p, recs[p.name]) for p in paths])
    assert [(x["arm"], x["pinned"], x["runs"]) for x in got] == [
        (x["arm"], x["pinned"], x["runs"]) for x in rows
    ]
    assert got[0]["drift"] == pytest.approx(rows[0]["drift"], rel=1e-12)  # a fraction, not "%"
    monkeypatch.setenv("COLUMNS", "100")
    assert main(*paths) == 0
    text = capsys.readouterr().out.splitlines()
    assert max(map(len, text)) <= 100 and len(text) > 2 + 3  # headers wrapped, rows whole
    assert sum("cpu-f64" in ln for ln in text) == 2


def test_help_is_not_a_record(capsys):
    with pytest.raises(SystemExit) as e:
        main("--help")
    assert e.value.code == 0 and "speed_before.relative" in capsys.readouterr().out


def test_findings_in_order(records):
    paths, recs = records
    said = "\n".join(ht.findings(ht.table_rows([(p, recs[p.name]) for p in paths])))
    lines = said.splitlines()
    assert lines[0].startswith("With a fixed number of rounds the median within-run CV is")
    assert lines[1].startswith("Best-of-N moves between runs of one setting by up to")
    assert lines[2].startswith("Pooled over all 24 rounds, the normalised round time")
    assert lines[3].startswith("Row by row (as few as 6 rounds each) the median r is")
    assert len(lines) == 4 and all(name in lines[2] for name in ht.NAMES.values())


def test_bad_record(records, tmp_path, capsys):
    paths, recs = records
    broken = dict(recs["nopin.json"])
    broken["plan"] = {"threads": THREADS}
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps(broken))
    out = tmp_path / "doc.md"
    assert main("--doc", "--out", out, paths[0], bad) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "broken.json: no plan.threads or plan.placement" in err
    assert not out.exists()
    notjson = tmp_path / "n.json"
    notjson.write_text("{")
    assert main(notjson) == 2
    assert "n.json: cannot read a record" in capsys.readouterr().err
    devonly = dict(recs["nopin.json"])
    devonly["cases"] = [c for c in devonly["cases"] if c["device"]]
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps(devonly))
    assert main(dev) == 2
    assert "no host arm" in capsys.readouterr().err
