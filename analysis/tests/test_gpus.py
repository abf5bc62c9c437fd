"""`convbench-analyze gpus`: one node's GPUs side by side, SLOW and COUPLED calls.

Records are built here from one real per-GPU record of a simulated node (tests/data), its samples
replaced by planted ones: times, the neighbours' utilisation, the GPU's violation shares,
temperature and the host's foreign CPU share.
"""

import copy
import json
import random
from pathlib import Path

import pytest

from convbench_analysis import cli, gpus

TEMPLATE = json.loads((Path(__file__).parent / "data" / "node_gpu_record.json").read_text())
N = 16


def record(times, utils, power=None, thermal=None, temp=None, host=None):
    """One per-GPU record whose one case has these samples (one per round)."""
    r = copy.deepcopy(TEMPLATE)
    c = r["cases"][0]
    base = c["samples"][0]
    samples = []
    for k, (t, u) in enumerate(zip(times, utils, strict=True)):
        s = copy.deepcopy(base)
        s["round"], s["seconds"] = k, t
        s["total_seconds"] = t * s["iterations"]
        s["neighbours"] = [
            {
                "index": 9,
                "uuid": "GPU-n",
                "util_pct": u,
                "power_w": 100 + 5 * u,
                "sm_clock_mhz": 1980,
                "violation_us": 0,
                "processes": int(u > 0),
                "unavailable": {},
            }
        ]
        if power is not None:
            s["violation_share"] = {"power": power[k], "thermal": thermal[k] if thermal else 0.0}
        if temp is not None:
            s["gpu_after"] = {"temperature_c": temp[k]}
        if host is not None:
            s["foreign_cpu_share"] = host[k]
        samples.append(s)
    c["samples"] = samples
    c["stats"]["best"] = min(times)
    c["stats"]["n"] = len(times)
    order = r["plan"]["order"][0]
    r["plan"]["order"] = [dict(order, round=k) for k in range(len(times))]
    r["plan"]["reps"] = r["plan"]["stopping"]["min_rounds"] = len(times)
    r["plan"]["stopping"]["max_rounds"] = len(times)
    return r


def noisy(base, n=N, cv=0.003, seed=1):
    rng = random.Random(seed)
    return [base * (1 + rng.gauss(0, cv)) for _ in range(n)]


def alternating(n=N):
    return [95.0 if k % 2 else 0.0 for k in range(n)]


def write_node(tmp_path, records):
    gpus_ = []
    for i, r in enumerate(records):
        p = tmp_path / f"node.gpu{i}.json"
        p.write_text(json.dumps(r))
        gpus_.append(
            {
                "index": i,
                "uuid": f"GPU-{i}",
                "record": p.name,
                "record_written": True,
                "exit_status": 0,
            }
        )
    s = tmp_path / "node.json"
    s.write_text(json.dumps({"kind": "convbench-node", "version": 1, "gpus": gpus_}))
    return s


def verdicts(tmp_path, records):
    return gpus.analyse(gpus.load_node([str(write_node(tmp_path, records))]))


def test_quiet_node_no_slow_no_coupling(tmp_path):
    rep = verdicts(tmp_path, [record(noisy(1e-3, seed=s), alternating()) for s in (1, 2)])
    assert rep["slow"] == [] and rep["coupled"] == []
    assert all("busy_over_idle" in r["coupling"] for r in rep["cases"])  # judged, not skipped


# Planted: comparing siblings' times against this GPU's (arguments swapped in _greater's call)
# made GPU 0 the slow one and failed this test.
def test_slow_gpu_while_alone(tmp_path):
    idle = [0.0] * N
    rep = verdicts(tmp_path, [record(noisy(1e-3), idle), record(noisy(1.08e-3, seed=3), idle)])
    assert rep["slow"] == [1]
    assert rep["coupled"] == []


def coupled_times(slowdown=1.10):
    return [
        t * (slowdown if u >= 50 else 1) for t, u in zip(noisy(1e-3), alternating(), strict=True)
    ]


# Planted: alternative="less" in the busy-vs-idle test (the sign flipped) failed this test; so
# did IDLE_UTIL compared with >= instead of <= (no idle samples: not judged).
def test_coupled_through_power(tmp_path):
    u = alternating()
    power = [0.4 if x >= 50 else 0.0 for x in u]
    a = record(coupled_times(), u, power=power, temp=[50.0] * N, host=[0.0] * N)
    b = record(noisy(1e-3, seed=5), u)
    rep = verdicts(tmp_path, [a, b])
    assert rep["coupled"] == [0]
    row = next(r for r in rep["cases"] if r["gpu"] == 0)
    assert row["coupling"]["through"] == ["power"]
    assert row["coupling"]["spearman_rho"] > 0.5
    assert rep["slow"] == []  # slower with a busy neighbour is coupling, not a slow GPU


# Planted: the rise taken as idle minus busy in mechanism() failed this test and the power one.
def test_coupled_through_thermal_and_host(tmp_path):
    u = alternating()
    temp = [75.0 if x >= 50 else 55.0 for x in u]
    host = [0.2 if x >= 50 else 0.0 for x in u]
    a = record(coupled_times(), u, power=[0.0] * N, temp=temp, host=host)
    rep = verdicts(tmp_path, [a, record(noisy(1e-3, seed=5), u)])
    row = next(r for r in rep["cases"] if r["gpu"] == 0)
    assert row["coupling"]["through"] == ["thermal", "host"]


def test_faster_when_busy_is_not_coupling(tmp_path):
    # times that fall with the neighbour's load (the sign flipped) are not a slowdown
    u = alternating()
    a = record(coupled_times(slowdown=0.9), u)
    rep = verdicts(tmp_path, [a, record(noisy(1e-3, seed=5), u)])
    assert rep["coupled"] == []


def test_noise_alone_is_not_coupling(tmp_path):
    # 1% noise, no dependence on the load: a few such seeds must all pass as uncoupled
    u = alternating()
    for seed in range(5):
        rep = verdicts(
            tmp_path,
            [
                record(noisy(1e-3, cv=0.01, seed=seed), u),
                record(noisy(1e-3, cv=0.01, seed=seed + 50), u),
            ],
        )
        assert rep["coupled"] == [], seed


def test_cli_on_records_and_on_summary(tmp_path, capsys):
    u = alternating()
    summary = write_node(
        tmp_path,
        [
            record(coupled_times(), u, power=[0.3 * (x > 0) for x in u]),
            record(noisy(1e-3, seed=5), u),
        ],
    )
    assert cli.main(["gpus", str(summary)]) == 0
    out = capsys.readouterr().out
    assert "COUPLED (power)" in out and "no coupling seen" in out
    files = [str(tmp_path / "node.gpu0.json"), str(tmp_path / "node.gpu1.json")]
    assert cli.main(["gpus", "--json", *files]) == 0
    assert json.loads(capsys.readouterr().out)["coupled"] == [0]


def test_bad_input_is_one_line(tmp_path, capsys):
    s = write_node(tmp_path, [record(noisy(1e-3), alternating())])
    (tmp_path / "node.gpu0.json").unlink()
    assert cli.main(["gpus", str(s)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such record" in err[0]


@pytest.mark.parametrize("util", [None])
def test_unreadable_neighbours_are_not_judged(tmp_path, util):
    r = record(noisy(1e-3), [0.0] * N)
    for s in r["cases"][0]["samples"]:
        s["neighbours"][0]["util_pct"] = util
    rep = verdicts(tmp_path, [r, copy.deepcopy(r)])
    assert rep["slow"] == [] and rep["coupled"] == []
    assert all("busy_over_idle" not in x["coupling"] for x in rep["cases"])


def test_formats_parse(tmp_path, capsys, monkeypatch):
    # csv: the cases table alone, its columns; md: both tables with their header rules; text
    # fitted to COLUMNS. Planted (seen failing): render's csv with the GPU list before it.
    import csv
    import io

    u = alternating()
    summary = write_node(
        tmp_path,
        [record(coupled_times(), u, power=[0.3 * (x > 0) for x in u]), record(noisy(1e-3), u)],
    )
    assert cli.main(["gpus", "--format", "csv", str(summary)]) == 0
    table = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert table[0] == list(gpus.HEADERS) and len(table) == 1 + 2
    assert {r[1] for r in table[1:]} == {"0", "1"} and "COUPLED (power)" in table[1][4]
    assert table[1][2].endswith(" ms") or table[1][2].endswith(" us")
    assert cli.main(["gpus", "--format", "md", str(summary)]) == 0
    md = capsys.readouterr().out.splitlines()
    assert sum(set(ln) <= set("|-:") and "---" in ln for ln in md) == 2
    monkeypatch.setenv("COLUMNS", "70")
    assert cli.main(["gpus", str(summary)]) == 0
    assert max(map(len, capsys.readouterr().out.splitlines())) <= 70
